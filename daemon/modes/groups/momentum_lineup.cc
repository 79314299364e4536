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

void MomentumLineup::moving(uint64_t version, std::span<const float> before) {
  if (!kept(version)) return;
  Delta& d = deltas_[version % window_];
  d.version = UINT64_MAX;  // not a delta until moved()
  d.values.assign(before.begin(), before.end());
}

void MomentumLineup::moved(uint64_t version, std::span<const float> after) {
  if (!kept(version)) return;
  Delta& d = deltas_[version % window_];
  if (d.values.size() != after.size()) return;
  for (size_t i = 0; i < after.size(); ++i) d.values[i] = after[i] - d.values[i];
  d.version = version;
}

const MomentumLineup::Delta* MomentumLineup::delta(uint64_t version) const {
  const Delta& d = deltas_[version % window_];
  return d.version == version ? &d : nullptr;
}

void MomentumLineup::gradient_at(uint64_t version, std::span<const float> grad) {
  if (version == 0 || !lined_up(version)) return;
  const Delta* y = delta(version);
  const Delta* a = delta(version - 1);
  if (!y || !a || y->values.size() != grad.size() || a->values.size() != grad.size()) return;
  // Four lanes of each sum (the elements i mod 4), added at the end: one
  // chain of additions a sum ran at the adder's latency, on the owner's
  // thread while the pushing group waited for its answer.
  constexpr size_t kLanes = 4;
  double aa[kLanes] = {}, ab[kLanes] = {}, bb[kLanes] = {}, ya[kLanes] = {}, yb[kLanes] = {};
  const size_t n = grad.size();
  const auto add = [&](size_t i, size_t l) {
    const double av = a->values[i], bv = grad[i], yv = y->values[i];
    aa[l] += av * av;
    ab[l] += av * bv;
    bb[l] += bv * bv;
    ya[l] += yv * av;
    yb[l] += yv * bv;
  };
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l) add(i + l, l);
  for (; i < n; ++i) add(i, i % kLanes);
  for (size_t l = 0; l < kLanes; ++l) {
    sums_.aa += aa[l];
    sums_.ab += ab[l];
    sums_.bb += bb[l];
    sums_.ya += ya[l];
    sums_.yb += yb[l];
  }
  ++sums_.lined_up;
}

}  // namespace gossipd::daemon
