#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/ctl/simulate_command.h"
#include "daemon/sim/time_model.h"
#include "protocol/transport/modelled_losses.h"

namespace gossipd::daemon {

// An entry of gossipctl simulate as the time model runs it: the traffic its
// mode says a round sends, configured from worker 0's flags as compare
// launches it (the hierarchy's groups from every worker's --group), and the
// hosts (modelled_hosts.h), with the entry's real segment deadline (not the
// patient one the training half runs with).
struct ModelledEntry {
  std::vector<std::string> members;  // the ids in the view's order
  std::unique_ptr<RoundTraffic> traffic;
  TimeModelOptions time;
  std::string step;  // how the step time was made, for the report
};

// Throws UsageError when the entry's mode has no time model.
ModelledEntry model_entry(const SimulateOptions& options, const std::string& entry);

// Each member's clock and wait after every round of a modelled run.
struct ModelledTimes {
  std::vector<std::vector<double>> clocks;  // [round - 1][member]; empty unless kept
  std::vector<std::vector<double>> waits;   // seconds waited on exchanges so far, as clocks
  std::vector<double> waited;               // at the end
  double slowest_s = 0;                     // the last member's clock at the end
  uint64_t bytes_sent = 0;                  // all members
  uint64_t skipped = 0;
};
// With `losses`, the messages it skips are added to it (for the members to skip).
ModelledTimes run_modelled(const ModelledEntry& entry, uint64_t rounds, bool keep_each_round,
                           protocol::ModelledLosses* losses = nullptr);

// The time model's parameters in words, for summary.json's time_model and
// the report: the links, the step, the stragglers, the drop rate.
std::string time_model_words(const SimulateOptions& options, const ModelledEntry& entry);

}  // namespace gossipd::daemon
