#include "protocol/gossip/share_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gossipd::protocol {

namespace {

// The most an honest owner's mix moves a segment, as a share of its radius
// (ClippedGossip::mix's weight).
constexpr double kHonestMix = 0.5;

// The lower median of the members' radii for one segment (a vote's sign
// dropped): a radius that is not a positive finite number counts as the
// largest.
double lower_median(std::vector<double>& radii) {
  for (double& r : radii) {
    r = std::fabs(r);
    if (!(std::isfinite(r) && r > 0)) r = std::numeric_limits<double>::infinity();
  }
  const auto at = radii.begin() + static_cast<std::ptrdiff_t>((radii.size() - 1) / 2);
  std::nth_element(radii.begin(), at, radii.end());
  return *at;
}

}  // namespace

void ShareBound::begin(const Group& group, const SegmentTable& segments, std::span<const float> params,
                       const ClippedGossip& judge, std::span<const std::string> owners,
                       const std::function<bool(const std::string&)>& named) {
  base_.assign(params.begin(), params.end());
  const size_t n = segments.size();
  slots_.assign(group.size() * n, 0.0f);
  for (uint32_t s = 0; s < n; ++s) {
    const auto x = params.subspan(segments[s].offset, segments[s].length);
    const auto tau = static_cast<float>(judge.tau(s, judge.cold(s) ? ClippedGossip::norm(x) : 0));
    const bool vote = owners[s] != group.node().id() && named(owners[s]);
    // A vote is the sign; a radius of 0 still votes, as the largest radius.
    slots_[group.rank() * n + s] = !vote ? tau : tau > 0 ? -tau : -std::numeric_limits<float>::infinity();
  }
}

std::vector<bool> ShareBound::undone(const Group& group, std::span<const std::string> owners) const {
  const size_t m = group.size(), n = owners.size();
  const auto& members = group.members();
  std::vector<size_t> rank(n);  // each segment's owner's rank
  for (size_t s = 0; s < n; ++s)
    rank[s] = static_cast<size_t>(std::find(members.begin(), members.end(), owners[s]) - members.begin());
  // votes[i * m + j]: member i named member j (marked a segment j owns).
  std::vector<char> votes(m * m, 0);
  for (size_t s = 0; s < n; ++s)
    for (size_t i = 0; i < m; ++i)
      if (rank[s] < m && slots_[i * n + s] < 0) votes[i * m + rank[s]] = 1;
  const auto most = [m](size_t count) { return 2 * count > m; };
  std::vector<bool> condemned(m), undo(m);
  for (size_t j = 0; j < m; ++j) {
    size_t count = 0;
    for (size_t i = 0; i < m; ++i) count += votes[i * m + j];
    condemned[j] = most(count);
  }
  for (size_t j = 0; j < m; ++j) {
    size_t count = 0;
    for (size_t i = 0; i < m; ++i) count += votes[i * m + j] && !condemned[i];
    undo[j] = most(count);
  }
  std::vector<bool> out(n);
  for (size_t s = 0; s < n; ++s) out[s] = rank[s] < m && undo[rank[s]];
  return out;
}

void ShareBound::bound_each(const Group& group, std::span<const std::string> owners) {
  const size_t members = group.size(), n = owners.size();
  const std::vector<bool> undo = undone(group, owners);
  bounds_.resize(n);
  std::vector<double> theirs(members);
  for (size_t s = 0; s < n; ++s) {
    for (size_t j = 0; j < members; ++j) theirs[j] = slots_[j * n + s];
    bounds_[s] = undo[s] ? 0.0 : kHonestMix * lower_median(theirs);
  }
}

size_t ShareBound::clip(const Group& group, const SegmentTable& segments, std::span<const std::string> owners,
                        std::span<float> params, ClippedGossip& judge) {
  bound_each(group, owners);
  size_t clipped = 0;
  const std::string& self = group.node().id();
  for (uint32_t s = 0; s < segments.size(); ++s) {
    const auto x = params.subspan(segments[s].offset, segments[s].length);
    const auto from = std::span<const float>(base_).subspan(segments[s].offset, segments[s].length);
    const double d = ClippedGossip::distance(from, 1.0, x, 1.0);
    const double t = bounds_[s];
    // Counted in the owner's record, not judged: an honest owner's change
    // follows the radius its partners taught it, which may differ from its
    // group's (the owner is judged in the group's mean instead).
    if (owners[s] != self) judge.count(owners[s], d, t, false);
    if (!(d > t)) continue;  // within the radius (or NaN, which adopt_finite kept out)
    const float scale = static_cast<float>(t / d);
    for (size_t i = 0; i < x.size(); ++i) x[i] = from[i] + scale * (x[i] - from[i]);
    ++clipped;
  }
  return clipped;
}

}  // namespace gossipd::protocol
