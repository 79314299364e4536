#include "protocol/collectives/collectives.h"

#include <cmath>

#include "protocol/collectives/butterfly.h"
#include "protocol/collectives/doubling.h"
#include "protocol/collectives/ring.h"

namespace gossipd::protocol {
namespace {

bool fits(size_t group_size, size_t count, size_t max_bytes) {
  return power_of_two(group_size) && count * sizeof(float) <= max_bytes;
}

bool fits(const Group& group, std::span<const float> data, size_t max_bytes) {
  return fits(group.size(), data.size(), max_bytes);
}

}  // namespace

AllreduceSchedule allreduce_schedule(size_t count, size_t group_size) {
  if (fits(group_size, count, kDoublingMaxBytes)) return AllreduceSchedule::kDoubling;
  if (fits(group_size, count, kButterflyMaxBytes)) return AllreduceSchedule::kButterfly;
  return AllreduceSchedule::kRing;
}

double allreduce_words_per_rank(size_t count, size_t group_size) {
  if (group_size <= 1 || count == 0) return 0;
  const double n = static_cast<double>(count), p = static_cast<double>(group_size);
  if (allreduce_schedule(count, group_size) == AllreduceSchedule::kDoubling) return std::log2(p) * n;
  return 2 * (p - 1) / p * n;
}

void Allreduce::run() {
  switch (allreduce_schedule(data_.size(), group_.size())) {
    case AllreduceSchedule::kDoubling:
      AllreduceDoubling(group_, data_).run();
      break;
    case AllreduceSchedule::kButterfly:
      AllreduceButterfly(group_, data_).run();
      break;
    case AllreduceSchedule::kRing:
      AllreduceRing(group_, data_).run();
      break;
  }
}

void ReduceScatter::run() {
  if (fits(group_, data_, kButterflyMaxBytes)) {
    Butterfly(group_, data_, Butterfly::Kind::kReduceScatter, counts_).run();
  } else {
    ReduceScatterRing(group_, data_, counts_).run();
  }
}

void Allgather::run() {
  if (fits(group_, data_, kButterflyMaxBytes)) {
    Butterfly(group_, data_, Butterfly::Kind::kAllgather, counts_).run();
  } else {
    AllgatherRing(group_, data_, counts_).run();
  }
}

}  // namespace gossipd::protocol
