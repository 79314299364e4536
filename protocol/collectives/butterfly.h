#pragma once

#include <span>
#include <string>
#include <vector>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/group.h"

namespace gossipd::protocol {

// Reduce-scatter and allgather for groups of 2^k members in k steps instead
// of the ring's n - 1 (Thakur, Rabenseifner and Gropp 2005). Each rank works
// on a window of consecutive blocks. Recursive halving (reduce-scatter): at
// distance n/2, n/4, ..., 1 a rank keeps the half of its window its rank bit
// picks, sends the other half to rank ^ distance and adds that partner's copy
// of the kept half; it ends with its own block. Recursive doubling
// (allgather): at distance 1, 2, ..., n/2 a rank sends its window to rank ^
// distance and receives the partner's, doubling the window. Every rank moves
// the same bytes as on the ring ((n - 1)/n of the buffer) in fewer, larger
// messages: fewer hops on the critical path, which is what small buffers and
// oversubscribed hosts pay for. Same block layout and results as the rings
// (ReduceScatterRing, AllgatherRing), v-variants included.
class Butterfly {
 public:
  enum class Kind { kReduceScatter, kAllgather };
  // Throws ProtocolConfigError unless the group size is a power of two, or
  // when `counts` is given and does not describe the buffer.
  Butterfly(Group& group, std::span<float> data, Kind kind, std::span<const size_t> counts = {});
  void run();

 private:
  friend class AllreduceButterfly;
  using Fold = CollectiveChannel::Fold;
  BlockRange span_of(size_t lo, size_t hi) const;        // blocks [lo, hi) as elements
  std::span<float> piece(BlockRange r, size_t j) const;  // piece j of r, cut as piece_count says
  // The halves of the window [lo, hi) at distance d: the one this rank
  // keeps (and sums) and the one it gives its partner.
  struct Halves {
    BlockRange keep, give;
    size_t mid;
  };
  Halves halves(size_t d, size_t lo, size_t hi) const;
  // One halving step at distance d on the window [lo, hi), which it halves.
  void halve(CollectiveChannel& channel, SendTracker& tracker, uint32_t step, size_t d, size_t& lo,
             size_t& hi);
  // One doubling step at distance d.
  void double_up(CollectiveChannel& channel, SendTracker& tracker, uint32_t step, size_t d);
  void exchange(CollectiveChannel& channel, SendTracker& tracker, uint32_t step, size_t partner,
                BlockRange out, BlockRange in, Fold fold);
  // After a failure: every partner may hold some of our sends.
  void release(CollectiveChannel& channel, SendTracker& tracker) const;

  Group& group_;
  std::span<float> data_;
  Kind kind_;
  std::vector<BlockRange> blocks_;
};

// Sum over a group of 2^k members, in place: a halving reduce-scatter then a
// doubling allgather (Rabenseifner's algorithm; MPICH's and OpenMPI's choice
// for mid-sized buffers). 2k steps moving 2(n - 1)/n of the buffer, like the
// ring's 2(n - 1) steps. Each block is summed once, on one rank, and copied
// to the others: replicas stay bit-identical. The last halving step and the
// first doubling step have the same partner (distance 1) and run piece by
// piece: a piece of our block goes back to the partner as soon as its sum is
// done, not after the whole block (at P = 2, the whole call is one pipeline).
class AllreduceButterfly {
 public:
  AllreduceButterfly(Group& group, std::span<float> data) : group_(group), data_(data) {}
  void run();

 private:
  void fused_step(Butterfly& b, CollectiveChannel& channel, SendTracker& tracker, uint32_t step, size_t lo,
                  size_t hi);

  Group& group_;
  std::span<float> data_;
};

}  // namespace gossipd::protocol
