#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <stop_token>

#include "protocol/transport/node.h"
#include "topology/view.h"

namespace gossipd::daemon {

// The members' exact average at the end of a gossip run: every member of
// `view` calls it once, after its last step, and each ends holding the
// same parameters and optimizer state to the bit (one ring allreduce of
// both over the view, summed in float, divided by the members). Gossip
// leaves replicas that differ; a user saves one model, so it is their
// consensus, not one member's drift.
//
// Returns the members averaged. Where one never comes (it finished at
// another step, failed, or left) the collective times out after `timeout`
// and the replica is left as it was: returns 0 and logs why. Throws
// protocol::Aborted when `stop` fires meanwhile.
uint32_t final_average(protocol::Node& node, const topology::View& view, std::span<float> params,
                       std::span<float> optimizer_state, std::chrono::milliseconds timeout,
                       std::stop_token stop);

}  // namespace gossipd::daemon
