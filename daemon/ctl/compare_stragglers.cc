#include "daemon/ctl/compare_stragglers.h"

#include <CLI/CLI.hpp>
#include <charconv>

#include "daemon/config/cli.h"
#include "daemon/config/worker_values.h"
#include "daemon/ctl/compare.h"

namespace gossipd::daemon {

constexpr int kMaxStepDelayMs = 60000;

void add_step_delays_flag(CLI::App* cmd, CompareOptions& o) {
  cmd->add_option("--inject-step-delay-ms", o.step_delays,
                  "Workers whose every step takes longer (gossipd run --inject-step-delay-ms), e.g. "
                  "w3=40,w7=40: a cluster of unequal speed on one machine");
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

std::string step_delays_setup(const CompareOptions& o) {
  std::string out;
  for (const auto& [k, ms] : compare_step_delays(o)) {
    if (ms == 0) continue;
    out += (out.empty() ? ", steps " : ", ") + std::string("w") + std::to_string(k) + " +" +
           std::to_string(ms) + " ms";
  }
  return out.empty() ? out : out + " (--inject-step-delay-ms)";
}

}  // namespace gossipd::daemon
