#pragma once

#include <chrono>
#include <functional>

namespace gossipd::testing {

// Polls `condition` every `poll` until it holds or `timeout` passes; true when
// it held. The one way tests wait for something to happen: a fixed sleep
// either wastes time or, on a slow machine (sanitizers, 2 shared cores), is
// too short.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout,
                std::chrono::milliseconds poll = std::chrono::milliseconds(10));

}  // namespace gossipd::testing
