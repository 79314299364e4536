#pragma once

#include <span>

#include "protocol/collectives/group.h"

namespace gossipd::protocol {

// Sum over a group of 2^k members, in place, by recursive doubling: in step
// s every rank swaps its whole buffer with rank ^ 2^s and adds. k steps
// instead of the ring's 2(n - 1), each moving the whole buffer: the faster
// schedule while a step's latency outweighs its bytes (small buffers; see
// Allreduce in collectives.h). Every rank computes the same sums in the same pairs (a + b on
// one side, b + a on the other, equal in IEEE arithmetic), so replicas stay
// bit-identical.
class AllreduceDoubling {
 public:
  // Throws ProtocolConfigError unless the group size is a power of two.
  AllreduceDoubling(Group& group, std::span<float> data);
  void run();

 private:
  Group& group_;
  std::span<float> data_;
};

}  // namespace gossipd::protocol
