#include "daemon/ctl/soak_record.h"

#include <algorithm>

namespace gossipd::daemon {

void SoakRecord::started(const std::string& id) { members_[id] = Member{}; }

void SoakRecord::killed(const std::string& id, double t) {
  members_.at(id).killed = t;
  missing_since_.erase(id);
  changes_.push_back({t, {}});
}

void SoakRecord::left(const std::string& id) {
  members_.at(id).left = true;
  missing_since_.erase(id);
}

void SoakRecord::start_sweep(double t) {
  t_ = t;
  views_.clear();
  states_.clear();
}

void SoakRecord::saw(const std::string& id, uint64_t round, const std::string& state,
                     const std::vector<std::string>& view) {
  Member& m = members_.at(id);
  if (round > m.round) {
    if (m.last_round_at) m.gap = std::max(m.gap, t_ - *m.last_round_at);
    m.last_round_at = t_;
    m.round = round;
  }
  m.trained = m.trained || state == "training";
  views_[id] = std::set<std::string>(view.begin(), view.end());
  states_[id] = state;
}

void SoakRecord::end_sweep() {
  std::set<std::string> live;
  for (const auto& [id, m] : members_) {
    if (!m.killed && !m.left) live.insert(id);
  }
  bool agree = !views_.empty();
  for (const auto& [id, view] : views_) agree = agree && view == live;
  if (agree) {
    for (Change& c : changes_) {
      if (!c.converged) c.converged = t_ - c.at;
    }
  }
  // A live member that every view held and some view lacks again: evicted
  // falsely once that lasts (a joiner is not missing before it is in).
  for (const std::string& id : live) {
    const bool missing =
        std::any_of(views_.begin(), views_.end(), [&](const auto& v) { return v.second.count(id) == 0; });
    if (!missing && !views_.empty()) admitted_.insert(id);
    if (!missing || !admitted_.count(id)) {
      missing_since_.erase(id);
      continue;
    }
    const double since = missing_since_.emplace(id, t_).first->second;
    if (t_ - since > evicted_after_) false_.insert(id);
  }
  const bool all_training =
      states_.size() == live.size() &&
      std::all_of(states_.begin(), states_.end(), [](const auto& s) { return s.second == "training"; });
  if (all_training) {
    last_full_sweep_ = t_;
    std::set<std::set<std::string>> distinct;
    for (const auto& [id, view] : views_) distinct.insert(view);
    split_at_end_ = distinct.size() > 1;
  }
}

bool SoakRecord::saw_everyone_training() const {
  return std::all_of(members_.begin(), members_.end(),
                     [](const auto& m) { return m.second.killed || m.second.left || m.second.trained; });
}

void SoakRecord::rss(double t, double bytes) { rss_.emplace_back(t, bytes); }

std::map<std::string, double> SoakRecord::gaps() const {
  std::map<std::string, double> out;
  for (const auto& [id, m] : members_) {
    if (m.gap >= 0) out[id] = m.gap;
  }
  return out;
}

std::optional<double> SoakRecord::mean_rss(double from, double to) const {
  double sum = 0;
  int n = 0;
  for (const auto& [t, bytes] : rss_) {
    if (t >= from && t < to) sum += bytes, ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

}  // namespace gossipd::daemon
