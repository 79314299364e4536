#pragma once

#include <string>
#include <vector>

#include "daemon/ctl/simulate_command.h"
#include "daemon/plan/link_model.h"
#include "daemon/sim/time_model.h"

namespace gossipd::daemon {

// The time model's hosts: ceil(N / --workers-per-host) of them, worker i on
// host i mod their number (as compare deals --groups: worker i in group i
// mod G, so --groups G with N / G workers a host puts each group on one
// host); every host's link at --bandwidth (the simulated default when not
// given) with --latency-ms, the hosts of the workers --slow-links names at
// their own rate; between workers on one host --host-bandwidth with
// kHostLatencyS; the workers --stragglers names computing their steps that
// many times slower. On a WAN (--topology, --preset wan) a host per worker,
// each in its region, the paths between regions as the file says
// (time_model.h's WanModel), and no other link flag.
struct ModelledHosts {
  std::vector<LinkModel> links;  // per host
  std::vector<uint32_t> host;    // per member
  LinkModel host_link;
  std::vector<double> compute;  // per member
  WanModel wan;
};

// What HTB is given for a link the topology does not cap (compare_wan.cc's
// "10gbit"), in bytes/s.
constexpr double kUncappedBytesPerS = 10e9 / 8;

// The group a worker on host `host` of `wan` takes with --group auto, as it
// would from its measured round trips (daemon/cluster/auto_group.h): named
// after the least id (as text: choose_group's) of the hosts whose round trip
// is within `near_ms`, itself included: two delays and the measuring PING's
// and ACK's padding (RoundTrips::kPaddingBytes) each at its sender's rate.
std::string modelled_auto_group(const WanTopology& wan, size_t host, double near_ms);
// `label` as worker `worker` holds it in the model: --group auto's
// modelled_auto_group on simulate's WAN (at gossipd run's default
// --group-near-ms), any other label as given.
std::string modelled_group(const SimulateOptions& options, size_t worker, const std::string& label);

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
