#pragma once

#include <memory>

#include "daemon/worker/mode.h"

namespace gossipd::daemon {

// --algo grid: one replica over a Pr x Pc process grid (daemon/modes/grid/grid_worker).
std::unique_ptr<Mode> make_grid_mode();

}  // namespace gossipd::daemon
