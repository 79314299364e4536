#include "protocol/collectives/barrier.h"

#include "protocol/collectives/collective_channel.h"

namespace gossipd::protocol {

void Barrier::run() {
  CollectiveChannel channel(group_, "barrier");
  const size_t n = group_.size();
  const size_t rank = group_.rank();
  // Round k: tell rank + 2^k, hear from rank - 2^k. After ceil(log2 n)
  // rounds everyone has heard, transitively, from everyone.
  uint32_t round = 0;
  for (size_t dist = 1; dist < n; dist *= 2, ++round) {
    channel.send(rank + dist, round, 0, {}, nullptr);
    channel.recv(rank + n - dist, round, 0, 0);
  }
}

}  // namespace gossipd::protocol
