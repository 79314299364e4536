#pragma once

#include <memory>

#include "daemon/worker/mode.h"

namespace gossipd::daemon {

// --algo groups: compute groups (daemon/modes/groups/groups_worker).
std::unique_ptr<Mode> make_groups_mode();

}  // namespace gossipd::daemon
