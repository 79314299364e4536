#pragma once

#include <string>

#include "daemon/config/cli.h"  // CLI::App, declared
#include "daemon/config/train_flags.h"

namespace gossipd::daemon {

struct TrainCommandOptions {
  TrainFlags train;
  std::string metrics_out;  // JSON lines, one per epoch; empty = none
  bool quiet = false;
};

// Registers `gossipd train` (one worker, no network) and returns it.
CLI::App* add_train_command(CLI::App& app, TrainCommandOptions& options);

// Runs it; returns the exit code. Throws on bad input (see run_cli).
int run_train_command(const TrainCommandOptions& options);

}  // namespace gossipd::daemon
