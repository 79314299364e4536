#include "protocol/robust/centered_clip.h"

#include <algorithm>
#include <cmath>

#include "protocol/wire/codec.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {

namespace {

// A chunk of each copy's coordinates (a multiple of 8, for Sum8): a pass
// works on one chunk of every copy at a time, in cache, and measures the
// distances in the same pass.
constexpr size_t kChunk = 512;

// ClippedGossip's naming with CenteredClip's thresholds.
ClipSpec naming(ClipSpec spec) {
  spec.far = CenteredClip::kFar;
  spec.name_after = CenteredClip::kNameAfter;
  return spec;
}

// The passes' kernels, each built twice, for AVX2 and for the baseline,
// and picked at load time (as daemon/modes/sparse/net's): the two give the
// same bits, with no FMA contraction in ISO C++ mode and the same operations
// in the same order.

// Sorts each of n columns of the m rows (`stride` apart) with an odd-even
// transposition network: m rounds of compare-exchanges between whole rows,
// each a min and a max that vectorize (an nth_element per coordinate took
// most of an aggregate's time). v ← the middle row (the mean of the middle
// two for an even m).
__attribute__((target_clones("avx2", "default"))) void median_of_columns(float* __restrict sorted, size_t m,
                                                                         size_t stride, size_t n,
                                                                         float* __restrict v) {
  for (size_t round = 0; round < m; ++round) {
    for (size_t j = round % 2; j + 1 < m; j += 2) {
      float* __restrict lo = sorted + j * stride;
      float* __restrict hi = lo + stride;
      for (size_t k = 0; k < n; ++k) {
        const float a = lo[k], b = hi[k];
        lo[k] = std::min(a, b);
        hi[k] = std::max(a, b);
      }
    }
  }
  const float* mid = sorted + (m / 2) * stride;
  if (m % 2) {
    std::copy_n(mid, n, v);
    return;
  }
  const float* below = mid - stride;
  for (size_t k = 0; k < n; ++k) v[k] = 0.5f * (below[k] + mid[k]);
}

// sums[j] += ClippedGossip::distance's terms for coordinates [begin,
// begin + n) of copy j against v.
__attribute__((target_clones("avx2", "default"))) void add_squared_distances(const float* const* copies,
                                                                             size_t m, const float* v,
                                                                             size_t begin, size_t n,
                                                                             Sum8* sums) {
  for (size_t j = 0; j < m; ++j) {
    const float* g = copies[j];
    sums[j].add(begin, begin + n, [&](size_t i) {
      const double d = double(g[i]) - double(v[i]);
      return d * d;
    });
  }
}

// x ← x + inv·Σ_j scale[j]·(copy_j − x) on coordinates [begin, begin + n),
// `delta` n floats of scratch.
__attribute__((target_clones("avx2", "default"))) void clipped_step(const float* const* copies,
                                                                    const float* scale, size_t m, float inv,
                                                                    size_t begin, size_t n,
                                                                    float* __restrict x,
                                                                    float* __restrict delta) {
  std::fill_n(delta, n, 0.0f);
  for (size_t j = 0; j < m; ++j) {
    const float* __restrict g = copies[j] + begin;
    const float s = scale[j];
    for (size_t k = 0; k < n; ++k) delta[k] += s * (g[k] - x[k]);
  }
  for (size_t k = 0; k < n; ++k) x[k] += inv * delta[k];
}

}  // namespace

CenteredClip::CenteredClip(ClipSpec spec, int iterations)
    : spec_(spec), iterations_(iterations), judge_(naming(spec)) {
  if (iterations_ < 1) throw ProtocolConfigError("centered clip: at least 1 iteration");
}

std::vector<size_t> CenteredClip::accepted(std::span<const std::string> members, size_t own,
                                           std::span<const float> rows, size_t width) {
  std::vector<size_t> take;
  for (size_t i = 0; i < members.size(); ++i) {
    if (i != own && judge_.named(members[i])) continue;  // as if lost
    if (!all_finite(std::as_bytes(rows.subspan(i * width, width)))) {
      if (i != own) {
        judge_.refused(members[i], false);
        far_[i] = 1;
      }
      continue;
    }
    take.push_back(i);
  }
  return take;
}

void CenteredClip::median(std::span<const float> rows, std::span<const size_t> take, std::span<float> out) {
  const size_t width = out.size(), m = take.size();
  copies_.clear();
  for (size_t i : take) copies_.push_back(rows.data() + i * width);
  sorted_.resize(m * kChunk);
  sums_.assign(m, Sum8{});
  for (size_t begin = 0; begin < width; begin += kChunk) {
    const size_t n = std::min(kChunk, width - begin);
    for (size_t j = 0; j < m; ++j) std::copy_n(copies_[j] + begin, n, sorted_.data() + j * kChunk);
    median_of_columns(sorted_.data(), m, kChunk, n, out.data() + begin);
    add_squared_distances(copies_.data(), m, out.data(), begin, n, sums_.data());
  }
  measured();
}

void CenteredClip::step(std::span<float> v, bool measure_after) {
  const size_t width = v.size(), m = copies_.size();
  scale_.resize(m);
  for (size_t j = 0; j < m; ++j)
    scale_[j] = distances_[j] > tau_ ? static_cast<float>(tau_ / distances_[j]) : 1.0f;
  const float inv = 1.0f / static_cast<float>(m);
  delta_.resize(kChunk);
  if (measure_after) sums_.assign(m, Sum8{});
  for (size_t begin = 0; begin < width; begin += kChunk) {
    const size_t n = std::min(kChunk, width - begin);
    clipped_step(copies_.data(), scale_.data(), m, inv, begin, n, v.data() + begin, delta_.data());
    if (measure_after) add_squared_distances(copies_.data(), m, v.data(), begin, n, sums_.data());
  }
  if (measure_after) measured();
}

void CenteredClip::measured() {
  distances_.resize(sums_.size());
  for (size_t j = 0; j < sums_.size(); ++j) distances_[j] = std::sqrt(sums_[j].total());
}

void CenteredClip::aggregate(std::span<const std::string> members, size_t own, std::span<const float> rows,
                             std::span<float> out) {
  const size_t width = out.size();
  if (rows.size() != members.size() * width || own >= members.size())
    throw ProtocolConfigError("centered clip: " + std::to_string(rows.size()) + " floats for " +
                              std::to_string(members.size()) + " copies of " + std::to_string(width));
  far_.assign(members.size(), 0);
  const std::vector<size_t> take = accepted(members, own, rows, width);
  if (take.empty()) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  median(rows, take, out);
  tau_ = spec_.tau > 0 ? spec_.tau : spec_.kappa * quantile(distances_, spec_.quantile);
  for (size_t j = 0; j < take.size(); ++j) {
    if (take[j] == own) continue;
    judge_.count(members[take[j]], distances_[j], tau_, false);
    far_[take[j]] = distances_[j] >= kFar * tau_ && distances_[j] > 0;
  }
  if (tau_ <= 0) return;  // every copy the same: the median is the mean
  // From the median's distances. Where an iteration clips no copy, v is
  // their mean and another would change nothing.
  for (int it = 0; it < iterations_; ++it) {
    const bool clips = std::any_of(distances_.begin(), distances_.end(), [&](double d) { return d > tau_; });
    const bool again = clips && it + 1 < iterations_;
    step(out, again);
    if (!again) return;
  }
}

void CenteredClip::tally(std::span<const std::string> members, size_t own,
                         std::span<const std::optional<std::vector<uint8_t>>> by_owner) {
  if (by_owner.size() != members.size())
    throw ProtocolConfigError("centered clip: verdicts of " + std::to_string(by_owner.size()) +
                              " owners for " + std::to_string(members.size()) + " members");
  for (size_t o = 0; o < members.size(); ++o) {
    if (by_owner[o] && by_owner[o]->size() != members.size())
      throw ProtocolConfigError("centered clip: owner " + std::to_string(o) +
                                "'s verdicts are not one per member");
    if (o != own && !by_owner[o]) judge_.refused(members[o]);
  }
  for (size_t j = 0; j < members.size(); ++j) {
    if (j == own) continue;
    uint32_t heard = 0, far = 0;
    for (size_t o = 0; o < members.size(); ++o) {
      if (o == j || !by_owner[o]) continue;
      ++heard;
      far += (*by_owner[o])[j] != 0;
    }
    if (heard > 0) judge_.tally(members[j], heard, far);
  }
}

}  // namespace gossipd::protocol
