#include "protocol/gossip/group_averages.h"

#include <algorithm>

#include "protocol/collectives/compressed.h"
#include "protocol/collectives/ring.h"

namespace gossipd::protocol {

void GroupAverages::average(Group& group, std::span<float> params) {
  const float inv = 1.0f / static_cast<float>(group.size());
  if (codec_.lossless() || start_.size() != params.size()) {
    AllreduceRing(group, params).run();
    for (float& v : params) v *= inv;
  } else {
    buffer_.resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) buffer_[i] = params[i] - start_[i];
    CompressedAllreduce(group, buffer_, mean_).run();
    for (size_t i = 0; i < params.size(); ++i) params[i] = start_[i] + buffer_[i] * inv;
  }
  if (!codec_.lossless()) base_.assign(params.begin(), params.end());
}

void GroupAverages::share(Group& group, std::span<float> params, const std::vector<BlockRange>& owned) {
  buffer_.assign(params.size(), 0.0f);
  const bool lossy = !codec_.lossless();
  for (const BlockRange& r : owned) {
    for (size_t i = r.begin; i < r.end; ++i) buffer_[i] = lossy ? params[i] - base_[i] : params[i];
  }
  if (!lossy) {  // every element has one owner: the sum is the owner's value, exactly
    AllreduceRing(group, buffer_).run();
    std::copy(buffer_.begin(), buffer_.end(), params.begin());
    return;
  }
  CompressedAllreduce(group, buffer_, shared_).run();
  for (size_t i = 0; i < params.size(); ++i) params[i] = base_[i] + buffer_[i];
  start_.assign(params.begin(), params.end());
}

void GroupAverages::reset() {
  start_.clear();
  mean_.clear();
  shared_.clear();
}

}  // namespace gossipd::protocol
