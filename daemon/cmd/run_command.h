#pragma once

#include "daemon/config/run_options.h"

namespace gossipd::daemon {

// `gossipd run`: one worker of a cluster, until training ends or a signal.
int run_run_command(const RunOptions& options);

}  // namespace gossipd::daemon
