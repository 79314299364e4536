#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/collectives/group.h"
#include "protocol/robust/centered_clip.h"

namespace gossipd::protocol {

// BTARD's aggregation (Gorbunov et al., ICML 2022) over a group, as
// --robust clip's mean: hierarchical Crossover-SGD's step (1) (the copies
// are replicas one local step apart from the group's last shared point)
// and AllReduce-SGD's gradients (daemon/modes/allreduce/robust_average.h).
// Each member owns a block of the vector, receives every member's copy of
// it (BlockGather), aggregates the copies by CenteredClip
// (protocol/robust/centered_clip.h) and an allgather hands every member
// every block, and with each block its owner's verdicts on the copies
// (protocol/robust/verdicts.h), which every member tallies alike: the
// members end the step with the same bits and name the same members.
class RobustGroupMean {
 public:
  explicit RobustGroupMean(ClipSpec spec) : clip_(spec) {}

  // out ← the robust mean over `group` of every member's `sent` (this
  // member's: its replica, or what its attack makes of it). Throws what the
  // collectives throw.
  void run(Group& group, std::span<const float> sent, std::span<float> out) {
    gather(group, sent);
    aggregate(group);
    share(group, out);
  }
  // run's three steps, for a caller that times the exchanges apart:
  // every member's copy of the own block of `sent`;
  void gather(Group& group, std::span<const float> sent);
  // CenteredClip on them, and its verdicts;
  void aggregate(const Group& group);
  // the allgather: out (sent's size) ← every block; every owner's verdicts tallied.
  void share(Group& group, std::span<float> out);

  // Ends a round's tally; the members named by it.
  std::vector<std::string> end_round() { return clip_.end_round(); }
  const ClippedGossip& judge() const { return clip_.judge(); }
  const CenteredClip& clip() const { return clip_; }

 private:
  CenteredClip clip_;
  size_t size_ = 0;             // the vector's
  std::vector<float> rows_;     // every member's copy of the own block
  std::vector<float> staging_;  // the allgather's: each block, then its owner's verdicts
  std::vector<size_t> counts_;  // per rank, in staging_
  std::vector<std::optional<std::vector<uint8_t>>> verdicts_;  // per owner
};

}  // namespace gossipd::protocol
