#pragma once

#include <span>
#include <vector>

#include "protocol/collectives/group.h"

namespace gossipd::protocol {

// Consensus distance of the group's replicas: (1/n) Σ_i ||x_i − x̄||², with
// x̄ the mean replica. Two allreduces: the replicas (for x̄), then each
// member's squared distance. Every member gets the same value. A collective:
// all members call it at the same point.
class ConsensusDistance {
 public:
  explicit ConsensusDistance(Group& group) : group_(group) {}
  double run(std::span<const float> x);

 private:
  Group& group_;
  std::vector<float> sum_;
};

}  // namespace gossipd::protocol
