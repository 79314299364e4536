#pragma once

#include <string>
#include <vector>

#include "daemon/ctl/simulate_command.h"
#include "daemon/plan/link_model.h"

namespace gossipd::daemon {

// The time model's hosts: ceil(N / --workers-per-host) of them, worker i on
// host i mod their number (as compare deals --groups: worker i in group i
// mod G, so --groups G with N / G workers a host puts each group on one
// host); every host's link at --bandwidth (the simulated default when not
// given) with --latency-ms, the hosts of the workers --slow-links names at
// their own rate; between workers on one host --host-bandwidth with
// kHostLatencyS; the workers --stragglers names computing their steps that
// many times slower.
struct ModelledHosts {
  std::vector<LinkModel> links;  // per host
  std::vector<uint32_t> host;    // per member
  LinkModel host_link;
  std::vector<double> compute;  // per member
};

// Between two processes on one host: a loopback message's latency, about
// what an 8 KB allreduce of two processes takes on the direct data path
// (5.5 us at best, tests/bench/README.md's collectives table).
constexpr double kHostLatencyS = 5e-6;

// `members`: the worker ids ("w0", ...) in the order the model indexes them;
// `options` resolved (resolve_simulate_flags).
ModelledHosts modelled_hosts(const SimulateOptions& options, const std::vector<std::string>& members);

// Types the time model's flags once, where run_simulate reads them (the
// bandwidths, --stragglers, --slow-links; compare's per-worker flags too):
// UsageError, in one line, for a bandwidth that is not a positive rate, a
// worker that does not exist, a factor that is not a positive number, a
// negative latency or a drop rate outside [0, 1).
void resolve_simulate_flags(SimulateOptions& options);

}  // namespace gossipd::daemon
