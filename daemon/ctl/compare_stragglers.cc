#include "daemon/ctl/compare_stragglers.h"

#include <CLI/CLI.hpp>
#include <charconv>

#include "daemon/config/cli.h"
#include "daemon/config/worker_values.h"
#include "daemon/ctl/compare.h"
#include "daemon/ctl/compare_report.h"

namespace gossipd::daemon {

constexpr int kMaxStepDelayMs = 60000;

constexpr double kMaxSlowdown = 100;

void add_step_delays_flag(CLI::App* cmd, CompareOptions& o) {
  cmd->add_option("--inject-step-delay-ms", o.step_delays,
                  "Workers whose every step takes longer (gossipd run --inject-step-delay-ms), e.g. "
                  "w3=40,w7=40: a cluster of unequal speed on one machine");
  cmd->add_option("--inject-step-slowdown", o.step_slowdowns,
                  "Workers that compute K times slower (gossipd run --inject-step-slowdown), e.g. w6=2,w7=2");
}

std::map<size_t, int> compare_step_delays(const CompareOptions& o) {
  std::map<size_t, int> delays;
  for (const auto& [k, text] : worker_values(o.step_delays, "--inject-step-delay-ms", o.workers)) {
    int ms = -1;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
    if (ec != std::errc() || end != text.data() + text.size() || ms < 0 || ms > kMaxStepDelayMs)
      throw UsageError("--inject-step-delay-ms: w" + std::to_string(k) + "=" + text +
                       " is not a whole number of milliseconds from 0 to " + std::to_string(kMaxStepDelayMs));
    delays[k] = ms;
  }
  return delays;
}

std::map<size_t, double> compare_step_slowdowns(const CompareOptions& o) {
  std::map<size_t, double> factors;
  for (const auto& [k, text] : worker_values(o.step_slowdowns, "--inject-step-slowdown", o.workers)) {
    double f = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
    if (ec != std::errc() || end != text.data() + text.size() || !(f >= 1 && f <= kMaxSlowdown))
      throw UsageError("--inject-step-slowdown: w" + std::to_string(k) + "=" + text +
                       " is not a factor from 1 to " + format("%g", kMaxSlowdown));
    factors[k] = f;
  }
  return factors;
}

std::vector<std::string> straggler_args(const CompareOptions& o, size_t index) {
  std::vector<std::string> a;
  if (const auto delays = compare_step_delays(o); delays.contains(index))
    a.insert(a.end(), {"--inject-step-delay-ms", std::to_string(delays.at(index))});
  if (const auto factors = compare_step_slowdowns(o); factors.contains(index))
    a.insert(a.end(), {"--inject-step-slowdown", format("%g", factors.at(index))});
  return a;
}

std::string step_delays_setup(const CompareOptions& o) {
  std::string delays, factors;
  for (const auto& [k, ms] : compare_step_delays(o)) {
    if (ms == 0) continue;
    delays += (delays.empty() ? ", steps " : ", ") + std::string("w") + std::to_string(k) + " +" +
              std::to_string(ms) + " ms";
  }
  for (const auto& [k, f] : compare_step_slowdowns(o)) {
    if (f == 1) continue;
    factors += (factors.empty() ? ", computing " : ", ") + std::string("w") + std::to_string(k) + " x" +
               format("%g", f);
  }
  return (delays.empty() ? delays : delays + " (--inject-step-delay-ms)") +
         (factors.empty() ? factors : factors + " (--inject-step-slowdown)");
}

}  // namespace gossipd::daemon
