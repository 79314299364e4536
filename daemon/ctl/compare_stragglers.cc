#include "daemon/ctl/compare_stragglers.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <optional>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare.h"
#include "daemon/ctl/compare_report.h"

namespace gossipd::daemon {

constexpr int kMaxStepDelayMs = 60000;

constexpr double kMaxSlowdown = 100;

namespace {

int whole_ms(const std::string& flag, const std::string& text, const std::string& item) {
  int ms = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), ms);
  if (ec != std::errc() || end != text.data() + text.size() || ms < 0 || ms > kMaxStepDelayMs)
    throw UsageError(flag + ": " + item + " is not a whole number of milliseconds from 0 to " +
                     std::to_string(kMaxStepDelayMs));
  return ms;
}

// --emulate-step-ms "40,w6=80,w7=80": a bare number for every worker, then
// the workers named.
void resolve_emulated_steps(CompareOptions& o) {
  const std::string flag = "--emulate-step-ms";
  std::string named;
  std::optional<int> every;
  for (const std::string& item : comma_list(o.emulated_steps.text)) {
    if (item.find('=') != std::string::npos) {
      named += (named.empty() ? "" : ",") + item;
    } else if (every) {
      throw UsageError(flag + ": '" + item +
                       "': give one number for every worker, then wK=MS for the others");
    } else {
      every = whole_ms(flag, item, "'" + item + "'");
    }
  }
  o.emulated_steps.values.clear();
  for (const auto& [k, v] : worker_values(named, flag, o.workers))
    o.emulated_steps.values[k] = whole_ms(flag, v, "w" + std::to_string(k) + "=" + v);
  for (int k = 0; every && k < o.workers; ++k)
    o.emulated_steps.values.try_emplace(static_cast<size_t>(k), *every);
}

}  // namespace

void add_step_delays_flag(CLI::App* cmd, CompareOptions& o) {
  cmd->add_option("--inject-step-delay-ms", o.step_delays.text,
                  "Workers whose every step takes longer (gossipd run --inject-step-delay-ms), e.g. "
                  "w3=40,w7=40: a cluster of unequal speed on one machine");
  cmd->add_option("--inject-step-slowdown", o.step_slowdowns.text,
                  "Workers that compute K times slower (gossipd run --inject-step-slowdown), e.g. w6=2,w7=2");
  cmd->add_option("--emulate-step-ms", o.emulated_steps.text,
                  "Emulated machines (gossipd run --emulate-step-ms): each step computes this long, e.g. 40 "
                  "for every worker, 40,w6=80,w7=80 for two 2x slower; each process then idles its core "
                  "the rest of the step, so workers sharing cores behave as machines of their own");
}

void resolve_step_delays(CompareOptions& o) {
  resolve(o.step_delays, "--inject-step-delay-ms", o.workers,
          [](const std::string& text, const std::string& item) {
            return whole_ms("--inject-step-delay-ms", text, item);
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
  resolve_emulated_steps(o);
}

std::vector<std::string> straggler_args(const CompareOptions& o, size_t index) {
  std::vector<std::string> a;
  if (const auto& delays = o.step_delays.values; delays.contains(index))
    a.insert(a.end(), {"--inject-step-delay-ms", std::to_string(delays.at(index))});
  if (const auto& factors = o.step_slowdowns.values; factors.contains(index))
    a.insert(a.end(), {"--inject-step-slowdown", format("%g", factors.at(index))});
  if (const auto& steps = o.emulated_steps.values; steps.contains(index) && steps.at(index) > 0)
    a.insert(a.end(), {"--emulate-step-ms", std::to_string(steps.at(index))});
  return a;
}

namespace {

// ", emulated machines: 40 ms a step, w6 80 ms, w7 80 ms (--emulate-step-ms)"
std::string emulated_setup(const CompareOptions& o) {
  std::map<int, int> count;  // the commonest step is the machines', the others named
  for (const auto& [k, ms] : o.emulated_steps.values) ++count[ms];
  if (count.empty()) return "";
  const int common = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
                       return a.second < b.second;
                     })->first;
  std::string text = ", emulated machines: " + std::to_string(common) + " ms a step";
  for (const auto& [k, ms] : o.emulated_steps.values)
    if (ms != common) text += ", w" + std::to_string(k) + " " + std::to_string(ms) + " ms";
  if (o.emulated_steps.values.size() < static_cast<size_t>(o.workers)) text += " (the others not emulated)";
  return text + " (--emulate-step-ms)";
}

}  // namespace

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
         (factors.empty() ? factors : factors + " (--inject-step-slowdown)") + emulated_setup(o);
}

}  // namespace gossipd::daemon
