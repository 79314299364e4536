#pragma once

#include "daemon/config/cli.h"  // CLI::App, declared
#include "daemon/config/run_options.h"

namespace gossipd::daemon {

// Registers `gossipd run` and its flags, filling `options`; returns it.
CLI::App* add_run_command(CLI::App& app, RunOptions& options);

}  // namespace gossipd::daemon
