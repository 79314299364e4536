#pragma once

#include "daemon/config/cli.h"  // CLI::App, declared
#include "daemon/ctl/compare.h"

namespace gossipd::daemon {

// Registers `gossipctl compare` and its flags, filling `options`; returns it.
CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);

}  // namespace gossipd::daemon
