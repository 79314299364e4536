#pragma once

#include <string>
#include <vector>

#include "daemon/ctl/simulate_command.h"
#include "daemon/plan/link_model.h"

namespace gossipd::daemon {

// The time model's hosts, one per worker: every link at --bandwidth (the
// simulated default when not given) with --latency-ms; the workers
// --slow-links names at their own rate; the workers --stragglers names
// computing their steps that many times slower.
struct ModelledHosts {
  std::vector<LinkModel> links;
  std::vector<double> compute;
};

// `members`: the worker ids ("w0", ...) in the order the model indexes them.
// Throws UsageError, in one line, for a bandwidth that is not a positive
// rate, a worker that does not exist, a factor that is not a positive
// number, a negative latency or a drop rate outside [0, 1).
ModelledHosts modelled_hosts(const SimulateOptions& options, const std::vector<std::string>& members);

// The same checks without building anything: for run_simulate, before any
// protocol runs.
void check_time_flags(const SimulateOptions& options);

}  // namespace gossipd::daemon
