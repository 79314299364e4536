#pragma once

#include "daemon/config/cli.h"  // CLI::App, declared
#include "daemon/ctl/compare.h"

namespace gossipd::daemon {

// Local gossipd processes compare runs at most (each a process on this machine).
constexpr int kMaxCompareWorkers = 64;

// The flags of every run gossipctl compare, simulate and tune make: workers
// (up to `max_workers`), model, data, schedule length, evaluations, network,
// output (into `options`).
void add_run_flags(CLI::App* cmd, CompareOptions& options, int max_workers = kMaxCompareWorkers);

// Registers `gossipctl compare` and its flags, filling `options`; returns it.
CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);

// compare's flags on `cmd` (gossipctl simulate takes the same).
void add_compare_flags(CLI::App* cmd, CompareOptions& options, int max_workers);

}  // namespace gossipd::daemon
