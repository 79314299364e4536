#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/config/mode_flags.h"
#include "daemon/config/run_options.h"
#include "daemon/worker/mode_set.h"

namespace CLI {
class App;
}

namespace gossipd::daemon {

// gossipd run's command line: the flags every mode shares into `options`,
// each mode's own into the mode (`flags` says whose is which).
struct RunCommandLine {
  RunOptions options;
  ModeSet modes;
  std::unique_ptr<ModeFlags> flags;
  CLI::App* command = nullptr;
};

// Adds the `run` subcommand to `app`, its flags bound to `line`.
void add_run_command(CLI::App& app, RunCommandLine& line);

// Parses `args` (what follows `gossipd run`) into `line` as gossipd run
// would, its modes' flags checked; throws UsageError with CLI11's line. For
// members held in another process (the Python module's, gossipctl simulate's).
void parse_run_args(RunCommandLine& line, const std::vector<std::string>& args);

}  // namespace gossipd::daemon
