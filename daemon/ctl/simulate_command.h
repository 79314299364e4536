#pragma once

#include "daemon/config/cli.h"  // CLI::App, declared
#include "daemon/ctl/compare.h"

// gossipctl simulate's entry points, declared here (gossipctl's main
// registers it with the others) and defined by daemon/sim/, the room above
// that runs gossipd run's members: as the tools registry defines what
// mode_tools.h declares, so that no include runs up.
namespace gossipd::daemon {

// Virtual workers gossipctl simulate runs at most with training: every one
// is a whole member (its replica, its dataset, its threads) in this process.
constexpr int kMaxSimulatedWorkers = 256;

// Registers `gossipctl simulate`: compare's flags, filling `options`; returns it.
CLI::App* add_simulate_command(CLI::App& app, CompareOptions& options);

// Runs each protocol of `options` as compare does, but with its workers as
// members of gossipd run in this process over an in-process hub
// (virtual_cluster.h): the same flags, protocols and arithmetic, so the
// parameters end the same as compare's loopback run that skipped no
// segment. Writes the same files as compare (summary.json with "simulated":
// true, the plots, report.md, report.html). Returns the exit code.
int run_simulate(const CompareOptions& options);

}  // namespace gossipd::daemon
