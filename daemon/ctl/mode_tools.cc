#include "daemon/ctl/mode_tools.h"

#include <CLI/CLI.hpp>

namespace gossipd::daemon {

bool was_parsed(const CLI::App* command) { return command != nullptr && command->parsed(); }

}  // namespace gossipd::daemon
