#pragma once

#include <span>
#include <string>
#include <vector>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/group.h"

namespace gossipd::protocol {

// A ring's blocks (one per rank: block_layout's) cut into pieces of the
// group's chunk_bytes (piece_count of the largest block), as every rank
// cuts them.
class RingLayout {
 public:
  RingLayout(const Group& group, size_t count, std::span<const size_t> counts, const std::string& name);
  // Piece j of block `block`, in elements of the whole buffer.
  BlockRange piece(size_t block, size_t j) const;
  size_t pieces() const { return pieces_; }

 private:
  std::vector<BlockRange> blocks_;
  size_t pieces_ = 1;
};

// The engine behind the ring collectives. The buffer is split into one block
// per rank and each block into pieces; at step s rank r sends block
// (r - s - shift) to its right neighbour and receives block (r - s - shift - 1)
// from its left, reducing it in the first `reduce_steps` steps and copying it
// after. A received piece is forwarded as soon as it is folded in, so sending
// one piece overlaps receiving and reducing the next (Baidu/Gloo pipelining).
class RingPipeline {
 public:
  // Even blocks (block_range), or block r of `counts[r]` elements.
  RingPipeline(Group& group, std::span<float> data, size_t shift, size_t steps, size_t reduce_steps,
               std::string name, std::span<const size_t> counts = {});
  void run();

 private:
  size_t block_at(size_t step, size_t extra) const;
  void run_steps(CollectiveChannel& channel, SendTracker& tracker);

  Group& group_;
  std::span<float> data_;
  size_t shift_;
  size_t steps_;
  size_t reduce_steps_;
  std::string name_;
  RingLayout layout_;
};

// Sum over the group, in place: reduce-scatter then allgather.
class AllreduceRing {
 public:
  AllreduceRing(Group& group, std::span<float> data);
  void run() { pipeline_.run(); }

 private:
  RingPipeline pipeline_;
};

// Sum over the group, in place; afterwards only block_range(count, size, rank)
// of the buffer holds the result on each rank. The v-variant: block r is
// counts[r] elements (in order; they must add up to the buffer's size).
class ReduceScatterRing {
 public:
  ReduceScatterRing(Group& group, std::span<float> data, std::span<const size_t> counts = {});
  void run() { pipeline_.run(); }

 private:
  RingPipeline pipeline_;
};

// In place: each rank contributes block_range(count, size, rank) of its
// buffer; afterwards every rank holds all blocks. The v-variant: rank r
// contributes counts[r] elements at offset counts[0] + ... + counts[r-1].
class AllgatherRing {
 public:
  AllgatherRing(Group& group, std::span<float> data, std::span<const size_t> counts = {});
  void run() { pipeline_.run(); }

 private:
  RingPipeline pipeline_;
};

// Convenience for one-off calls.
inline void allreduce_sum(Group& group, std::span<float> data) { AllreduceRing(group, data).run(); }

}  // namespace gossipd::protocol
