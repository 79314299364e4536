#pragma once

#include "daemon/config/mode_flags.h"
#include "daemon/config/run_options.h"
#include "daemon/worker/mode_set.h"

namespace gossipd::daemon {

// gossipd run: the member of options.algo's mode (whose flags `flags` has
// parsed into `modes`), its lines on stdout and its records in
// --control-out. Returns the exit code; bad input is a UsageError.
int run_run_command(const RunOptions& options, ModeSet& modes, const ModeFlags& flags);

}  // namespace gossipd::daemon
