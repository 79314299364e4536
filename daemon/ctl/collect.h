#pragma once

#include <string>

#include "daemon/config/cli.h"  // CLI::App, declared

namespace gossipd::daemon {

struct CollectOptions {
  std::string hosts;  // file: one HOST:PORT (a daemon's --http) per line
  std::string out;
  double target = 0.85;
  int poll_ms = 1000;
};

CLI::App* add_collect_command(CLI::App& app, CollectOptions& options);
// Reads running daemons' /status until they finish and writes the same
// summary.json, plots and report as compare (no averaged model: the
// replicas are not here).
int run_collect(const CollectOptions& options);

}  // namespace gossipd::daemon
