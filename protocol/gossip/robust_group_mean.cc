#include "protocol/gossip/robust_group_mean.h"

#include <algorithm>

#include "protocol/collectives/block_gather.h"
#include "protocol/collectives/collectives.h"
#include "protocol/robust/verdicts.h"

namespace gossipd::protocol {

void RobustGroupMean::gather(Group& group, std::span<const float> sent) {
  size_ = sent.size();
  const BlockRange own = block_range(size_, group.size(), group.rank());
  rows_.resize(group.size() * own.size());
  BlockGather(group, sent).run(rows_);
}

void RobustGroupMean::aggregate(const Group& group) {
  const size_t k = group.size(), words = Verdicts::words(k);
  counts_.resize(k);
  for (size_t r = 0; r < k; ++r) counts_[r] = block_range(size_, k, r).size() + words;
  staging_.resize(size_ + k * words);
  const BlockRange own = block_range(size_, k, group.rank());
  const auto at = staging_.begin() + static_cast<std::ptrdiff_t>(own.begin + group.rank() * words);
  clip_.aggregate(group.members(), group.rank(), rows_, std::span<float>(at, own.size()));
  Verdicts::encode(clip_.verdicts(), std::span<float>(at + static_cast<std::ptrdiff_t>(own.size()), words));
}

void RobustGroupMean::share(Group& group, std::span<float> out) {
  Allgather(group, staging_, counts_).run();
  const size_t k = group.size(), words = Verdicts::words(k);
  verdicts_.assign(k, std::nullopt);
  for (size_t r = 0; r < k; ++r) {
    const BlockRange block = block_range(size_, k, r);
    const auto from = staging_.begin() + static_cast<std::ptrdiff_t>(block.begin + r * words);
    std::copy_n(from, block.size(), out.begin() + static_cast<std::ptrdiff_t>(block.begin));
    verdicts_[r] =
        Verdicts::decode(std::span<const float>(from + static_cast<std::ptrdiff_t>(block.size()), words), k);
  }
  clip_.tally(group.members(), group.rank(), verdicts_);
}

}  // namespace gossipd::protocol
