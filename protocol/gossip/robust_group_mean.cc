#include "protocol/gossip/robust_group_mean.h"

#include <algorithm>

#include "protocol/collectives/block_gather.h"
#include "protocol/collectives/collectives.h"

namespace gossipd::protocol {

void RobustGroupMean::run(Group& group, std::span<const float> sent, std::span<float> out) {
  const BlockRange own = block_range(sent.size(), group.size(), group.rank());
  rows_.resize(group.size() * own.size());
  BlockGather(group, sent).run(rows_);
  block_.resize(own.size());
  clip_.aggregate(group.members(), group.rank(), rows_, block_);
  std::copy(block_.begin(), block_.end(), out.begin() + static_cast<std::ptrdiff_t>(own.begin));
  Allgather(group, out).run();
}

}  // namespace gossipd::protocol
