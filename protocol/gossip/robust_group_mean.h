#pragma once

#include <span>
#include <string>
#include <vector>

#include "protocol/collectives/group.h"
#include "protocol/robust/centered_clip.h"

namespace gossipd::protocol {

// Hierarchical Crossover-SGD's step (1) under --robust clip: the group's
// mean replaced by BTARD's aggregation (Gorbunov et al., ICML 2022), as
// AllReduce-SGD's gradients are. Each member owns a block of the
// parameters, receives every member's copy of it (BlockGather),
// aggregates the copies by CenteredClip (protocol/robust/centered_clip.h)
// and an allgather hands every member every block: the members still end
// the step with the same bits. The copies are replicas one local step
// apart from the group's last shared point, so honest ones differ by a
// step's noise and τ is small against a Byzantine member's change.
class RobustGroupMean {
 public:
  explicit RobustGroupMean(ClipSpec spec) : clip_(spec) {}

  // out ← the robust mean over `group` of every member's `sent` (this
  // member's: its replica, or what its attack makes of it). Throws what the
  // collectives throw.
  void run(Group& group, std::span<const float> sent, std::span<float> out);
  // Ends a round's tally; the members named by it.
  std::vector<std::string> end_round() { return clip_.end_round(); }
  const ClippedGossip& judge() const { return clip_.judge(); }

 private:
  CenteredClip clip_;
  std::vector<float> rows_, block_;
};

}  // namespace gossipd::protocol
