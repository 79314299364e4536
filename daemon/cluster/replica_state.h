#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// A worker's replica as it stands between two steps: what a joiner downloads
// (state_transfer.h) and what a checkpoint holds (checkpoint.h). Parameters
// (for SGP, the push-sum numerators), optimizer state, and in the header the
// step, the cluster's schedule (steps per epoch, epochs), the mode and SGP's
// weights.
struct ReplicaState {
  proto::StateHeader header;
  std::vector<float> params;
  std::vector<float> optimizer;
};

// The state after `step` steps of a run whose epochs have `steps_per_epoch`:
// `header` (the schedule and mode) with the step and epoch set, and copies
// of the floats.
inline ReplicaState replica_state(proto::StateHeader header, uint64_t step, size_t steps_per_epoch,
                                  std::span<const float> params, std::span<const float> optimizer) {
  ReplicaState st;
  st.header = std::move(header);
  st.header.set_step(step);
  st.header.set_epoch(static_cast<uint32_t>(step / std::max<size_t>(1, steps_per_epoch)));
  st.params.assign(params.begin(), params.end());
  st.optimizer.assign(optimizer.begin(), optimizer.end());
  return st;
}

}  // namespace gossipd::daemon
