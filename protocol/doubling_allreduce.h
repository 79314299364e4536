#pragma once

#include <span>

#include "protocol/group.h"

namespace gossipd::protocol {

// Sum over a group of 2^k members, in place, by recursive doubling: in step
// s every rank swaps its whole buffer with rank ^ 2^s and adds. k steps
// instead of the ring's 2(n - 1), each moving the whole buffer: the faster
// schedule while a step's latency outweighs its bytes (small buffers; see
// Allreduce). Every rank computes the same sums in the same pairs (a + b on
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

// Sum over the group, in place, by the schedule measured fastest for the
// size (tests/bench/README.md): recursive doubling for buffers up to
// kDoublingMaxBytes on a power-of-two group, the pipelined ring otherwise.
class Allreduce {
 public:
  static constexpr size_t kDoublingMaxBytes = size_t{256} << 10;
  Allreduce(Group& group, std::span<float> data);
  void run();

 private:
  Group& group_;
  std::span<float> data_;
  bool doubling_;
};

}  // namespace gossipd::protocol
