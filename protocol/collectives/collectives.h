#pragma once

#include <span>

#include "protocol/collectives/group.h"

namespace gossipd::protocol {

// The collectives the modes call. Each picks its schedule by group size and
// buffer size, from the measurements in tests/bench/README.md ("Choosing the
// schedule"): on a power-of-two group recursive doubling (allreduce, up to
// kDoublingMaxBytes) and the butterfly (up to kButterflyMaxBytes), where
// fewer steps beat the ring's pipelining; the pipelined ring above that and
// on every other group. All members pick the same schedule (the sizes are
// the same everywhere), and every schedule gives the same results for
// integer-valued inputs.
constexpr size_t kDoublingMaxBytes = size_t{128} << 10;
constexpr size_t kButterflyMaxBytes = size_t{2} << 20;

// The schedule Allreduce runs for `count` floats over `group_size` ranks.
enum class AllreduceSchedule { kDoubling, kButterfly, kRing };
AllreduceSchedule allreduce_schedule(size_t count, size_t group_size);

// Floats one rank sends in that Allreduce, the mean over the ranks (what a
// planner predicts): 2(p-1)/p of count for the ring and the butterfly (each
// a reduce-scatter then an allgather), log2(p) times count for doubling.
double allreduce_words_per_rank(size_t count, size_t group_size);

// Sum over the group, in place.
class Allreduce {
 public:
  Allreduce(Group& group, std::span<float> data) : group_(group), data_(data) {}
  void run();

 private:
  Group& group_;
  std::span<float> data_;
};

// Sum over the group, in place; afterwards block `rank` (block_range, or
// counts[rank] elements) holds it.
class ReduceScatter {
 public:
  ReduceScatter(Group& group, std::span<float> data, std::span<const size_t> counts = {})
      : group_(group), data_(data), counts_(counts) {}
  void run();

 private:
  Group& group_;
  std::span<float> data_;
  std::span<const size_t> counts_;
};

// Rank r contributes its block (block_range, or counts[r] elements);
// afterwards every rank holds every block.
class Allgather {
 public:
  Allgather(Group& group, std::span<float> data, std::span<const size_t> counts = {})
      : group_(group), data_(data), counts_(counts) {}
  void run();

 private:
  Group& group_;
  std::span<float> data_;
  std::span<const size_t> counts_;
};

}  // namespace gossipd::protocol
