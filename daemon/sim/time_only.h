#pragma once

#include <string>

#include "daemon/ctl/simulate_command.h"
#include "daemon/sim/modelled_entry.h"

namespace gossipd::daemon {

// gossipctl simulate --no-train: each protocol's --rounds on the time model
// alone, no replica (up to kMaxTimeOnlyWorkers): summary.json in compare's
// schema (rounds per second, bytes per worker per round, skipped messages,
// the modelled time; no accuracy: -1) and report.md's table. Returns the exit code.
int run_time_only(const SimulateOptions& options);

}  // namespace gossipd::daemon
