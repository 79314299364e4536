#pragma once

#include <memory>

#include "daemon/worker/mode.h"

namespace gossipd::daemon {

// --algo pipeline: one replica over K stages, times D replicas (daemon/modes/pipeline/pipeline_worker).
std::unique_ptr<Mode> make_pipeline_mode();

}  // namespace gossipd::daemon
