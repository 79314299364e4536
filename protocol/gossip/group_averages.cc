#include "protocol/gossip/group_averages.h"

#include <algorithm>
#include <cmath>

#include "protocol/collectives/compressed.h"
#include "protocol/collectives/ring.h"
#include "protocol/wire/codec.h"

namespace gossipd::protocol {

size_t keep_own_where_not_finite(std::span<float> result, std::span<const float> own) {
  if (all_finite(std::as_bytes(result))) return 0;  // the common case: one pass that vectorizes
  size_t refused = 0;
  for (size_t i = 0; i < result.size(); ++i) {
    if (std::isfinite(result[i])) continue;
    result[i] = own[i];
    ++refused;
  }
  return refused;
}

size_t GroupAverages::average(Group& group, std::span<float> params) {
  own_.assign(params.begin(), params.end());
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
  const size_t refused = keep_own_where_not_finite(params, own_);
  apart_ = apart_ || refused > 0;
  if (!codec_.lossless()) base_.assign(params.begin(), params.end());
  return refused;
}

size_t GroupAverages::share(Group& group, std::span<float> params, const std::vector<BlockRange>& owned) {
  own_.assign(params.begin(), params.end());
  buffer_.assign(params.size(), 0.0f);
  const bool lossy = !codec_.lossless();
  for (const BlockRange& r : owned) {
    for (size_t i = r.begin; i < r.end; ++i) buffer_[i] = lossy ? params[i] - base_[i] : params[i];
  }
  if (!lossy) {  // every element has one owner: the sum is the owner's value, exactly
    AllreduceRing(group, buffer_).run();
    std::copy(buffer_.begin(), buffer_.end(), params.begin());
    return keep_own_where_not_finite(params, own_);
  }
  CompressedAllreduce(group, buffer_, shared_).run();
  for (size_t i = 0; i < params.size(); ++i) params[i] = base_[i] + buffer_[i];
  const size_t refused = keep_own_where_not_finite(params, own_);
  start_.assign(params.begin(), params.end());
  // Refused elements kept each member's own value: the members' results
  // differ there, so the next average starts in float32.
  if (apart_ || refused > 0) start_.clear();
  apart_ = false;
  return refused;
}

void GroupAverages::reset() {
  start_.clear();
  apart_ = false;
  mean_.clear();
  shared_.clear();
}

}  // namespace gossipd::protocol
