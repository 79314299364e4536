#pragma once

#include <memory>

#include "daemon/ctl/mode_tools.h"

namespace gossipd::daemon {

// The sparse mode's gossipctl commands (the tools registry,
// daemon/modes/tools.cc): `plan sparse`, `sparse generate|infer` and
// `bench sparse`.
std::unique_ptr<ModeTools> make_sparse_tools();

}  // namespace gossipd::daemon
