#include "daemon/modes/groups/tune_speeds.h"

#include <algorithm>
#include <numeric>

#include "daemon/ctl/compare_report.h"

namespace gossipd::daemon {

namespace {

// The compute per step of the last record that timed one (0: none did).
double last_timed_ms(const std::vector<proto::EpochRecord>& records) {
  for (auto r = records.rbegin(); r != records.rend(); ++r)
    if (r->compute_ms_per_round() > 0) return r->compute_ms_per_round();
  return 0.0;
}

}  // namespace

bool every_member_timed(const std::vector<std::vector<proto::EpochRecord>>& workers) {
  return std::all_of(workers.begin(), workers.end(), [](const auto& w) { return last_timed_ms(w) > 0; });
}

MemberSpeeds member_speeds(const std::vector<std::string>& files) {
  MemberSpeeds s;
  for (const auto& f : files) s.compute_ms.push_back(last_timed_ms(read_epoch_records(f)));
  const auto [fastest, slowest] = std::minmax_element(s.compute_ms.begin(), s.compute_ms.end());
  if (s.compute_ms.empty() || *fastest <= 0 || *slowest <= kSameSpeed * *fastest) return s;
  std::vector<size_t> by_speed(s.compute_ms.size());
  std::iota(by_speed.begin(), by_speed.end(), size_t{0});
  std::stable_sort(by_speed.begin(), by_speed.end(),
                   [&](size_t a, size_t b) { return s.compute_ms[a] < s.compute_ms[b]; });
  for (size_t i : by_speed) s.order.push_back("w" + std::to_string(i));
  return s;
}

std::string order_flag(const MemberSpeeds& s) {
  std::string out;
  for (const auto& id : s.order) out += (out.empty() ? "" : ",") + id;
  return out;
}

std::string describe_speeds(const MemberSpeeds& s, size_t groups) {
  std::string line = "Compute per step, from the first synchronous probe:";
  for (size_t i = 0; i < s.compute_ms.size(); ++i)
    line += (i ? ", w" : " w") + std::to_string(i) + " " + format("%.1f", s.compute_ms[i]) + " ms";
  if (s.order.empty())
    return line + ": one speed (the slowest within " + format("%g", kSameSpeed) +
           "x of the fastest), so the groups take the members by rank.";
  line += ": groups of like speed, fastest first (--compute-group-order " + order_flag(s) + ")";
  if (groups > 1 && s.order.size() % groups == 0) {
    const size_t per = s.order.size() / groups;
    line += ", e.g. at g = " + std::to_string(groups) + ":";
    for (size_t g = 0; g < groups; ++g) {
      line += " [";
      for (size_t k = 0; k < per; ++k) line += (k ? " " : "") + s.order[g * per + k];
      line += "]";
    }
  }
  return line + ".";
}

}  // namespace gossipd::daemon
