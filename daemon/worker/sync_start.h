#pragma once

#include <cstddef>
#include <memory>
#include <stop_token>

#include "daemon/config/run_options.h"
#include "daemon/worker/worker.h"
#include "protocol/group.h"

namespace gossipd::daemon {

// What the workers of the modes that spread one replica over processes
// (grid, pipeline) share to start.

// This process's rank: its place among the initial members (sorted ids).
size_t rank_of(const WorkerContext& c);

// A step's collectives: a peer silent for --timeout-ms fails it.
protocol::CollectiveOptions step_options(const RunOptions& o);

// Every member on `tag`, waited for up to --startup-timeout-ms (a barrier:
// every process is up before the first step); `stop` aborts the wait.
std::unique_ptr<protocol::Group> every_member_up(protocol::Node& node, uint32_t tag,
                                                 const std::vector<std::string>& members, const RunOptions& o,
                                                 std::stop_token stop);

}  // namespace gossipd::daemon
