#pragma once

#include <memory>

#include "daemon/worker/mode.h"

namespace gossipd::daemon {

// --algo allreduce: AllReduce-SGD (daemon/modes/allreduce/allreduce_worker).
std::unique_ptr<Mode> make_allreduce_mode();

}  // namespace gossipd::daemon
