#include "daemon/ctl/compare_stragglers.h"

#include <CLI/CLI.hpp>
#include <charconv>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare.h"
#include "daemon/ctl/compare_report.h"

namespace gossipd::daemon {

constexpr int kMaxStepDelayMs = 60000;

constexpr double kMaxSlowdown = 100;

void add_step_delays_flag(CLI::App* cmd, CompareOptions& o) {
  cmd->add_option("--inject-step-delay-ms", o.step_delays.text,
                  "Workers whose every step takes longer (gossipd run --inject-step-delay-ms), e.g. "
                  "w3=40,w7=40: a cluster of unequal speed on one machine");
  cmd->add_option("--inject-step-slowdown", o.step_slowdowns.text,
                  "Workers that compute K times slower (gossipd run --inject-step-slowdown), e.g. w6=2,w7=2");
}

void resolve_step_delays(CompareOptions& o) {
  resolve(o.step_delays, "--inject-step-delay-ms", o.workers,
          [](const std::string& text, const std::string& item) {
            int ms = -1;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
            if (ec != std::errc() || end != text.data() + text.size() || ms < 0 || ms > kMaxStepDelayMs)
              throw UsageError("--inject-step-delay-ms: " + item +
                               " is not a whole number of milliseconds from 0 to " +
                               std::to_string(kMaxStepDelayMs));
            return ms;
          });
  resolve(o.step_slowdowns, "--inject-step-slowdown", o.workers,
          [](const std::string& text, const std::string& item) {
            double f = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
            if (ec != std::errc() || end != text.data() + text.size() || !(f >= 1 && f <= kMaxSlowdown))
              throw UsageError("--inject-step-slowdown: " + item + " is not a factor from 1 to " +
                               format("%g", kMaxSlowdown));
            return f;
          });
}

std::vector<std::string> straggler_args(const CompareOptions& o, size_t index) {
  std::vector<std::string> a;
  if (const auto& delays = o.step_delays.values; delays.contains(index))
    a.insert(a.end(), {"--inject-step-delay-ms", std::to_string(delays.at(index))});
  if (const auto& factors = o.step_slowdowns.values; factors.contains(index))
    a.insert(a.end(), {"--inject-step-slowdown", format("%g", factors.at(index))});
  return a;
}

std::string step_delays_setup(const CompareOptions& o) {
  std::string delays, factors;
  for (const auto& [k, ms] : o.step_delays.values) {
    if (ms == 0) continue;
    delays += (delays.empty() ? ", steps " : ", ") + std::string("w") + std::to_string(k) + " +" +
              std::to_string(ms) + " ms";
  }
  for (const auto& [k, f] : o.step_slowdowns.values) {
    if (f == 1) continue;
    factors += (factors.empty() ? ", computing " : ", ") + std::string("w") + std::to_string(k) + " x" +
               format("%g", f);
  }
  return (delays.empty() ? delays : delays + " (--inject-step-delay-ms)") +
         (factors.empty() ? factors : factors + " (--inject-step-slowdown)");
}

}  // namespace gossipd::daemon
