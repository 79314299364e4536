#pragma once

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

}  // namespace gossipd::daemon
