#include "daemon/modes/groups/shard_clip.h"

#include <algorithm>

#include "protocol/robust/centered_clip.h"

namespace gossipd::daemon {

namespace {

// CenteredClip's thresholds: each push is judged against the median of
// the latest pushes, as a copy is against the median of a step's copies.
protocol::ClipSpec judged_as_centered_clip(protocol::ClipSpec spec) {
  spec.far = protocol::CenteredClip::kFar;
  spec.name_after = protocol::CenteredClip::kNameAfter;
  return spec;
}

// The coordinate-wise median of 3 and of 4 rows without a sort: the same
// values as sorting each column (every push of 3 or 4 groups goes through
// one), built for AVX2 and the baseline.
__attribute__((target_clones("avx2", "default"))) void median_of_3(const float* a, const float* b,
                                                                   const float* c, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = std::max(std::min(a[i], b[i]), std::min(std::max(a[i], b[i]), c[i]));
}

// Of four, the two that are neither the least nor the most: the larger of
// the pairs' lows and the smaller of their highs.
__attribute__((target_clones("avx2", "default"))) void median_of_4(const float* a, const float* b,
                                                                   const float* c, const float* d, float* out,
                                                                   size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float low = std::max(std::min(a[i], b[i]), std::min(c[i], d[i]));
    const float high = std::min(std::max(a[i], b[i]), std::max(c[i], d[i]));
    out[i] = 0.5f * (low + high);
  }
}

}  // namespace

void coordinate_median(std::span<const float* const> rows, std::span<float> out) {
  const size_t m = rows.size(), n = out.size();
  if (m == 3) return median_of_3(rows[0], rows[1], rows[2], out.data(), n);
  if (m == 4) return median_of_4(rows[0], rows[1], rows[2], rows[3], out.data(), n);
  std::vector<float> column(m);
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < m; ++k) column[k] = rows[k][i];
    std::sort(column.begin(), column.end());
    out[i] = m % 2 ? column[m / 2] : 0.5f * (column[m / 2 - 1] + column[m / 2]);
  }
}

ShardClip::ShardClip(protocol::ClipSpec spec, std::string self)
    : clip_(judged_as_centered_clip(spec)), self_(std::move(self)) {}

void ShardClip::median(Rows& rows) {
  take_.clear();
  for (const auto& [pusher, row] : rows.latest)
    if (!named(pusher)) take_.push_back(row.data());
  const size_t m = take_.size(), n = rows.latest.begin()->second.size();
  if (m < kMedianOf) {  // no majority to take a median of: clip the norm
    rows.reference.assign(n, 0.0f);
    return;
  }
  rows.reference.resize(n);
  coordinate_median(take_, rows.reference);
}

std::span<const float> ShardClip::centre(const std::string& from, size_t shard, std::span<const float> grad,
                                         std::span<const float> values) {
  Rows& rows = shards_[shard];
  rows.latest[from].assign(grad.begin(), grad.end());
  median(rows);
  const std::vector<float>& r = rows.reference;
  const auto segment = static_cast<uint32_t>(shard);
  const double d = protocol::ClippedGossip::distance(r, 1.0, grad, 1.0);
  const double own = clip_.cold(segment) ? protocol::ClippedGossip::norm(values) : 0.0;
  const protocol::ClippedGossip::Share s = clip_.share(from, segment, d, own, 1.0f);
  clipped_ = s.clipped;
  std::span<const float> applied = grad;
  if (s.clipped) {
    out_.resize(grad.size());
    for (size_t i = 0; i < grad.size(); ++i)  // in double: g − r of two floats may overflow one
      out_[i] = static_cast<float>(double(r[i]) + double(s.scale) * (double(grad[i]) - double(r[i])));
    applied = out_;
  }
  return applied;
}

void ShardClip::keep(const std::vector<size_t>& shards) {
  std::erase_if(shards_, [&](const auto& kv) {
    return std::find(shards.begin(), shards.end(), kv.first) == shards.end();
  });
}

std::vector<std::string> ShardClip::end_round() {
  std::vector<std::string> named = clip_.end_round();
  std::erase(named, self_);
  return named;
}

std::map<std::string, protocol::PeerClipping> ShardClip::pushers() const {
  std::map<std::string, protocol::PeerClipping> all = clip_.peers();
  all.erase(self_);
  return all;
}

}  // namespace gossipd::daemon
