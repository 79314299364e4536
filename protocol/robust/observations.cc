#include "protocol/robust/observations.h"

#include <cmath>

namespace gossipd::protocol {

void AttackObservations::observe(std::string_view peer, uint32_t segment, std::span<const float> y,
                                 std::span<const float> x) {
  if (y.size() != x.size()) return;
  auto [it, first] = square_.try_emplace(segment, x.size(), 0.0f);
  std::vector<float>& sq = it->second;
  if (sq.size() != x.size()) sq.assign(x.size(), 0.0f);
  const float keep = first ? 0.0f : 0.75f;
  for (size_t i = 0; i < x.size(); ++i) {
    const float d = y[i] - x[i];
    sq[i] = keep * sq[i] + (1 - keep) * d * d;
  }
  last_[segment][std::string(peer)].assign(y.begin(), y.end());
}

std::span<const float> AttackObservations::spread(uint32_t segment) const {
  const auto it = square_.find(segment);
  if (it == square_.end()) return {};
  root_.resize(it->second.size());
  for (size_t i = 0; i < root_.size(); ++i) root_[i] = std::sqrt(it->second[i]);
  return root_;
}

std::span<const float> AttackObservations::last(std::string_view peer, uint32_t segment) const {
  const auto seg = last_.find(segment);
  if (seg == last_.end()) return {};
  const auto it = seg->second.find(peer);
  return it == seg->second.end() ? std::span<const float>{} : std::span<const float>(it->second);
}

}  // namespace gossipd::protocol
