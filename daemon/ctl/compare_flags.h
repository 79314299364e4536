#pragma once

#include "daemon/config/cli.h"  // CLI::App, declared
#include "daemon/ctl/compare.h"

namespace gossipd::daemon {

// The flags of every run gossipctl compare and tune make: workers, model,
// data, schedule length, evaluations, network, output (into `options`).
void add_run_flags(CLI::App* cmd, CompareOptions& options);

// Registers `gossipctl compare` and its flags, filling `options`; returns it.
CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);

}  // namespace gossipd::daemon
