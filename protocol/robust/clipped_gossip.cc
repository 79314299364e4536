#include "protocol/robust/clipped_gossip.h"

#include <algorithm>
#include <cmath>

#include "protocol/robust/sum8.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {

double quantile(std::vector<double> v, double q) {
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(q * double(v.size() - 1));
  std::nth_element(v.begin(), at, v.end());
  return *at;
}

namespace {

// A pass over every segment received: built for AVX2 and the baseline,
// picked at load time, the same bits (ISO C++: no FMA contraction).
__attribute__((target_clones("avx2", "default"))) double squared_distance(const float* x, double a,
                                                                          const float* y, double b,
                                                                          size_t n) {
  return sum8(n, [&](size_t i) {
    const double d = b * double(y[i]) - a * double(x[i]);
    return d * d;
  });
}

__attribute__((target_clones("avx2", "default"))) double squared_norm(const float* x, size_t n) {
  return sum8(n, [&](size_t i) { return double(x[i]) * double(x[i]); });
}

}  // namespace

double ClippedGossip::distance(std::span<const float> x, double a, std::span<const float> y, double b) {
  return std::sqrt(squared_distance(x.data(), a, y.data(), b, x.size()));
}

double ClippedGossip::norm(std::span<const float> x) { return std::sqrt(squared_norm(x.data(), x.size())); }

bool ClippedGossip::cold(uint32_t segment) const {
  const auto it = distances_.find(segment);
  return spec_.tau == 0 && (it == distances_.end() || it->second.size() < spec_.min_history);
}

ClippedGossip::ClippedGossip(ClipSpec spec) : spec_(spec) {
  if (!(spec_.tau >= 0) || !(spec_.kappa > 0) || !(spec_.quantile >= 0 && spec_.quantile <= 1) ||
      spec_.window == 0 || spec_.min_history == 0 || !(spec_.cold > 0) || !(spec_.far >= 1) ||
      spec_.name_after == 0)
    throw ProtocolConfigError(
        "clipped gossip: tau must be >= 0 (0: adaptive), kappa and cold > 0, quantile in [0, 1], far >= 1, "
        "window, min_history and name_after >= 1");
}

double ClippedGossip::tau(uint32_t segment, double own_norm) const {
  if (spec_.tau > 0) return spec_.tau;
  if (cold(segment)) return spec_.cold * own_norm;
  const auto& history = distances_.at(segment);
  return spec_.kappa * quantile({history.begin(), history.end()}, spec_.quantile);
}

void ClippedGossip::remember(uint32_t segment, double d) {
  auto& w = distances_[segment];
  w.push_back(d);
  if (w.size() > spec_.window) w.pop_front();
}

bool ClippedGossip::mix(const std::string& peer, uint32_t segment, std::span<float> x,
                        std::span<const float> y, float weight) {
  const double d = distance(x, 1.0, y, 1.0);
  const Share s = share(peer, segment, d, cold(segment) ? norm(x) : 0, weight);  // ‖x‖ only where cold
  for (size_t i = 0; i < x.size(); ++i) x[i] += s.scale * (y[i] - x[i]);
  return s.clipped;
}

ClippedGossip::Share ClippedGossip::share(const std::string& peer, uint32_t segment, double d,
                                          double own_norm, float weight) {
  const double t = tau(segment, own_norm);
  const bool judged = distances_[segment].size() >= spec_.name_history;
  remember(segment, t > 0 ? std::min(d, spec_.far * t) : d);
  const bool clipped = count(peer, d, t, judged);
  return {clipped ? static_cast<float>(weight * (t / d)) : weight, clipped};
}

bool ClippedGossip::count(const std::string& peer, double d, double t, bool judged) {
  const bool clipped = d > t;
  if (judged) {
    Tally& tally = round_[peer];
    ++tally.heard;
    tally.far += d >= spec_.far * t && d > 0;
  }
  std::lock_guard lock(mu_);
  PeerClipping& p = peers_[peer];
  ++p.received;
  p.clipped += clipped;
  return clipped;
}

void ClippedGossip::refused(const std::string& peer, bool judged) {
  if (judged) tally(peer, 1, 1);
  std::lock_guard lock(mu_);
  ++peers_[peer].refused;
}

void ClippedGossip::tally(const std::string& peer, uint32_t heard, uint32_t far) {
  Tally& t = round_[peer];
  t.heard += heard;
  t.far += far;
}

std::vector<std::string> ClippedGossip::end_round() {
  std::vector<std::string> named;
  std::lock_guard lock(mu_);
  for (const auto& [peer, tally] : round_) {
    PeerClipping& p = peers_[peer];
    p.far_rounds = 2 * tally.far > tally.heard ? p.far_rounds + 1 : 0;
    if (!p.named && p.far_rounds >= spec_.name_after) {
      p.named = true;
      named.push_back(peer);
    }
  }
  round_.clear();
  return named;
}

bool ClippedGossip::named(const std::string& peer) const {
  std::lock_guard lock(mu_);
  const auto it = peers_.find(peer);
  return it != peers_.end() && it->second.named;
}

std::map<std::string, PeerClipping> ClippedGossip::peers() const {
  std::lock_guard lock(mu_);
  return peers_;
}

}  // namespace gossipd::protocol
