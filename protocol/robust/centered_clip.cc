#include "protocol/robust/centered_clip.h"

#include <algorithm>
#include <cmath>

#include "protocol/wire/codec.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {

namespace {

// ClippedGossip's naming with CenteredClip's thresholds.
ClipSpec naming(ClipSpec spec) {
  spec.far = CenteredClip::kFar;
  spec.name_after = CenteredClip::kNameAfter;
  return spec;
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
      if (i != own) judge_.refused(members[i]);
      continue;
    }
    take.push_back(i);
  }
  return take;
}

void CenteredClip::median(std::span<const float> rows, std::span<const size_t> take, std::span<float> out) {
  const size_t width = out.size(), m = take.size();
  // The accepted copies sorted coordinate by coordinate with an odd-even
  // transposition network: m rounds of compare-exchanges between whole
  // rows, each a min and a max the compiler vectorizes (an nth_element
  // per coordinate took most of an aggregate's time).
  sorted_.resize(m * width);
  for (size_t j = 0; j < m; ++j)
    std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(take[j] * width), width,
                sorted_.begin() + static_cast<std::ptrdiff_t>(j * width));
  for (size_t round = 0; round < m; ++round) {
    for (size_t j = round % 2; j + 1 < m; j += 2) {
      float* lo = sorted_.data() + j * width;
      float* hi = lo + width;
      for (size_t k = 0; k < width; ++k) {
        const float a = lo[k], b = hi[k];
        lo[k] = std::min(a, b);
        hi[k] = std::max(a, b);
      }
    }
  }
  const float* mid = sorted_.data() + (m / 2) * width;
  if (m % 2) {
    std::copy_n(mid, width, out.begin());
    return;
  }
  // An even count: the mean of the two middle values.
  const float* below = mid - width;
  for (size_t k = 0; k < width; ++k) out[k] = 0.5f * (below[k] + mid[k]);
}

bool CenteredClip::step(std::span<const float> rows, std::span<const size_t> take, std::span<const double> d,
                        std::span<float> v) {
  const size_t width = v.size();
  delta_.assign(width, 0.0f);
  bool clipped = false;
  for (size_t j = 0; j < take.size(); ++j) {
    const float* g = rows.data() + take[j] * width;
    const float s = d[j] > tau_ ? static_cast<float>(tau_ / d[j]) : 1.0f;
    clipped = clipped || d[j] > tau_;
    for (size_t k = 0; k < width; ++k) delta_[k] += s * (g[k] - v[k]);
  }
  const float inv = 1.0f / static_cast<float>(take.size());
  for (size_t k = 0; k < width; ++k) v[k] += inv * delta_[k];
  return clipped;
}

void CenteredClip::aggregate(std::span<const std::string> members, size_t own, std::span<const float> rows,
                             std::span<float> out) {
  const size_t width = out.size();
  if (rows.size() != members.size() * width || own >= members.size())
    throw ProtocolConfigError("centered clip: " + std::to_string(rows.size()) + " floats for " +
                              std::to_string(members.size()) + " copies of " + std::to_string(width));
  const std::vector<size_t> take = accepted(members, own, rows, width);
  if (take.empty()) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  median(rows, take, out);
  distances_.clear();
  for (size_t i : take)
    distances_.push_back(ClippedGossip::distance(out, 1.0, rows.subspan(i * width, width), 1.0));
  tau_ = spec_.tau > 0 ? spec_.tau : spec_.kappa * quantile(distances_, spec_.quantile);
  for (size_t j = 0; j < take.size(); ++j)
    if (take[j] != own) judge_.count(members[take[j]], distances_[j], tau_, true);
  if (tau_ <= 0) return;  // every copy the same: the median is the mean
  // The first iteration from the median's distances; where it clipped no
  // copy, v is their mean and another would change nothing.
  for (int it = 0; step(rows, take, distances_, out) && ++it < iterations_;) {
    for (size_t j = 0; j < take.size(); ++j)
      distances_[j] = ClippedGossip::distance(out, 1.0, rows.subspan(take[j] * width, width), 1.0);
  }
}

}  // namespace gossipd::protocol
