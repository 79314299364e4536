#pragma once

#include <cstddef>
#include <cstdint>

#include "daemon/config/cli.h"  // CLI::App, declared

namespace gossipd::daemon {

// `gossipctl bench membership`: N members of the real membership code in
// this one process (InProcCluster: each its Node, validator, receive and
// membership threads, on the in-process transport), as N daemons would run
// it but with no training. It measures, per member, the messages and bytes
// it sends per second over a quiet window, then SIGKILL-like deaths one at
// a time: the seconds until every survivor's view drops the dead member
// (median and worst), evictions of members that were alive (false), the
// suspicions raised and the members that found themselves cut off.
struct MembershipBenchOptions {
  size_t members = 100;
  int kills = 5;
  double window_s = 10.0;  // the quiet window traffic is measured over
  int heartbeat_ms = 200;  // gossipd run --heartbeat-ms (the protocol period)
  int failure_timeout_ms = 3000;
  double limit_s = 60.0;  // a kill not seen everywhere by then counts as not detected
  uint64_t seed = 1;
  size_t max_local_health = 8;  // Lifeguard's local health score at most (0: off; MembershipOptions)
};

CLI::App* add_membership_bench_command(CLI::App& bench, MembershipBenchOptions& options);
// Prints one JSON line; exit code 1 when a kill was not detected everywhere
// in `limit_s` or a live member was evicted.
int run_membership_bench(const MembershipBenchOptions& options);

}  // namespace gossipd::daemon
