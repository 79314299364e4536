#include "daemon/modes/groups/momentum_lineup.h"

#include <cmath>

namespace gossipd::daemon {

void MomentumLineup::Sums::add(const Sums& o) {
  aa += o.aa;
  ab += o.ab;
  bb += o.bb;
  ya += o.ya;
  yb += o.yb;
  lined_up += o.lined_up;
}

std::optional<double> MomentumLineup::Sums::momentum() const {
  const double det = aa * bb - ab * ab;
  if (lined_up < 2 || !(std::abs(det) > 1e-12 * aa * bb) || aa <= 0) return std::nullopt;
  return (ya * bb - yb * ab) / det;
}

void MomentumLineup::moved(uint64_t version, std::span<const float> before, std::span<const float> after) {
  Delta& d = deltas_[version % window_];
  d.version = version;
  d.values.resize(after.size());
  for (size_t i = 0; i < after.size(); ++i) d.values[i] = after[i] - before[i];
}

const MomentumLineup::Delta* MomentumLineup::delta(uint64_t version) const {
  const Delta& d = deltas_[version % window_];
  return d.version == version ? &d : nullptr;
}

void MomentumLineup::gradient_at(uint64_t version, std::span<const float> grad) {
  if (version == 0) return;
  const Delta* y = delta(version);
  const Delta* a = delta(version - 1);
  if (!y || !a || y->values.size() != grad.size() || a->values.size() != grad.size()) return;
  for (size_t i = 0; i < grad.size(); ++i) {
    const double av = a->values[i], bv = grad[i], yv = y->values[i];
    sums_.aa += av * av;
    sums_.ab += av * bv;
    sums_.bb += bv * bv;
    sums_.ya += yv * av;
    sums_.yb += yv * bv;
  }
  ++sums_.lined_up;
}

}  // namespace gossipd::daemon
