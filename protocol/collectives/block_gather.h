#pragma once

#include <span>

#include "protocol/collectives/group.h"

namespace gossipd::protocol {

// The exchange of an all-to-all ("butterfly") reduce-scatter without its
// reduction: rank r sends block b of its buffer (block_range over the
// group's size, the layout of ReduceScatter and Allgather) to rank b, and
// keeps every rank's copy of its own block r apart, one row per rank. What
// a robust aggregation needs at the block's owner (BTARD's CenteredClip),
// where a sum would hide who sent what. Each rank sends and receives
// (n - 1)/n of the buffer, as in a ring reduce-scatter, in one step of
// n - 1 messages each way instead of n - 1 steps.
class BlockGather {
 public:
  BlockGather(Group& group, std::span<const float> data) : group_(group), data_(data) {}
  // rows: group.size() rows of this rank's block size, row i rank i's copy
  // (this rank's own copied in). Throws PeerTimeout, PeerLost or Aborted as
  // the other collectives do.
  void run(std::span<float> rows);

 private:
  Group& group_;
  std::span<const float> data_;
};

}  // namespace gossipd::protocol
