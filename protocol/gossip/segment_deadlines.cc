#include "protocol/gossip/segment_deadlines.h"

#include <algorithm>
#include <cmath>

namespace gossipd::protocol {
namespace {

using Duration = SegmentDeadlines::Duration;

// The element at fraction q of `v` (0: the least, 1: the greatest); v not empty.
Duration at_quantile(std::vector<Duration> v, double q) {
  const double f = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size());
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(std::max(0.0, std::ceil(f) - 1.0)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

SegmentDeadlines::SegmentDeadlines(DeadlineSpec spec) : spec_(spec), current_(spec.ceiling) {
  spec_.per_peer = std::max<size_t>(1, spec_.per_peer);
}

Duration SegmentDeadlines::wait_for(const std::string& peer) {
  if (!spec_.adaptive || peers_.size() < spec_.warm_up) return current_;
  const auto it = peers_.find(peer);
  if (it == peers_.end() || it->second.median <= current_) return current_;
  if (++it->second.passed < std::max<size_t>(1, spec_.probe_every)) return Duration::zero();
  it->second.passed = 0;
  return current_;
}

void SegmentDeadlines::arrived(const std::string& peer, Duration after) {
  record(peer, std::max(after, Duration::zero()));
}

void SegmentDeadlines::missed(const std::string& peer) {
  const Duration ceiling = spec_.ceiling;
  record(peer, std::min(ceiling, 2 * current_));
}

Duration SegmentDeadlines::typical(const std::string& peer) const {
  const auto it = peers_.find(peer);
  return it == peers_.end() ? Duration(spec_.ceiling) : it->second.median;
}

void SegmentDeadlines::record(const std::string& peer, Duration sample) {
  Samples& s = peers_[peer];
  if (s.ring.size() < spec_.per_peer) {
    s.ring.push_back(sample);
  } else {
    s.ring[s.next] = sample;
  }
  s.next = (s.next + 1) % spec_.per_peer;
  s.median = at_quantile(s.ring, 0.5);
  if (spec_.adaptive && peers_.size() >= spec_.warm_up) current_ = from_medians();
}

Duration SegmentDeadlines::from_medians() const {
  std::vector<Duration> medians;
  medians.reserve(peers_.size());
  for (const auto& [peer, s] : peers_) medians.push_back(s.median);
  const double scaled =
      static_cast<double>(at_quantile(std::move(medians), spec_.quantile).count()) * (1.0 + spec_.slack);
  const Duration d = Duration(static_cast<Duration::rep>(scaled)) + spec_.margin;
  const Duration floor = spec_.floor;
  const Duration ceiling = spec_.ceiling;
  return std::clamp(d, floor, ceiling);
}

}  // namespace gossipd::protocol
