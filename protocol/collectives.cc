#include "protocol/collectives.h"

#include "protocol/butterfly_collectives.h"
#include "protocol/doubling_allreduce.h"
#include "protocol/ring_collectives.h"

namespace gossipd::protocol {
namespace {

bool fits(const Group& group, std::span<const float> data, size_t max_bytes) {
  return power_of_two(group.size()) && data.size_bytes() <= max_bytes;
}

}  // namespace

void Allreduce::run() {
  if (fits(group_, data_, kDoublingMaxBytes)) {
    AllreduceDoubling(group_, data_).run();
  } else if (fits(group_, data_, kButterflyMaxBytes)) {
    AllreduceButterfly(group_, data_).run();
  } else {
    AllreduceRing(group_, data_).run();
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
