#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/robust/clipped_gossip.h"
#include "protocol/robust/sum8.h"

namespace gossipd::protocol {

// BTARD's aggregation (Gorbunov et al., ICML 2022) as AllReduce-SGD's
// --robust clip: on one block of the gradients, at the member that owns it
// in an all-to-all exchange (BlockGather), CenteredClip (Karimireddy, He
// and Jaggi, ICML 2021) over every member's copy:
//   v ← v + (1/m)·Σ_i clip(g_i − v, τ),   clip(d, τ) = d·min(1, τ/‖d‖),
// `iterations` times from the coordinate-wise median of the m copies. A
// Byzantine copy then moves the block by at most τ/m per iteration,
// whatever it holds. τ is the fixed --robust clip:TAU, or kappa × the
// `quantile` (ClipSpec's) of this step's distances to the median: every
// member's copy of a step arrives at once, so, unlike a gossip segment's,
// the radius needs no history, and it holds while more than a quarter of
// the copies are honest. Where no copy is beyond τ the first iteration is
// the plain mean (to float rounding) and the next ones change nothing.
// Naming is ClippedGossip's bookkeeping with thresholds of its own: the
// owner passes a verdict on each member's copy, far where it is kFar × τ
// away or more, or not finite (verdicts()); every member tallies every
// owner's verdicts (carried in the allgather, protocol/robust/verdicts.h)
// and names a member far at most of the owners that judged it in
// kNameAfter steps in a row (tally(), end_round()). So every honest member
// names the same members at the same step, an attacker is judged on all
// its blocks, and an honest member whose data sets one block of its
// momentum apart (far at that block's owner alone, step after step: seen
// at 256 members) is not named; a Byzantine owner's verdicts are one vote
// of the m − 1 on each member. The thresholds: every member is judged every
// step on a radius of this step's copies, so honest gradients of a few
// unusual batches in a row were measured beyond 4 τ in 3 steps (gossip's
// thresholds named one), and a stale replay stays at 2.5-3.5 τ.
class CenteredClip {
 public:
  static constexpr double kFar = 2.5;
  static constexpr uint32_t kNameAfter = 10;

  explicit CenteredClip(ClipSpec spec, int iterations = 3);

  // out ← the aggregate of the block whose copies are `rows` (row i, of
  // out.size() floats, member members[i]'s; members[own] the caller's,
  // never judged). A copy holding NaN or an infinity is refused; where no
  // copy is left, out is zero (the block does not move this step).
  void aggregate(std::span<const std::string> members, size_t own, std::span<const float> rows,
                 std::span<float> out);
  // This step's verdict on each member's copy (aggregate()'s members, in
  // order): 1 far, 0 not (or not judged: its own, a named member's).
  std::span<const uint8_t> verdicts() const { return far_; }
  // This step's tally from every owner's verdicts on `members` (by_owner[o]:
  // owner members[o]'s; nullopt where it sent none that could be read,
  // which is counted against it as a refused copy). No member judges itself.
  void tally(std::span<const std::string> members, size_t own,
             std::span<const std::optional<std::vector<uint8_t>>> by_owner);
  // Ends a step's tally; the members named by it.
  std::vector<std::string> end_round() { return judge_.end_round(); }
  const ClippedGossip& judge() const { return judge_; }
  // The radius of the last aggregate.
  double last_tau() const { return tau_; }

 private:
  // The copies aggregate() takes: finite, and of members not named.
  std::vector<size_t> accepted(std::span<const std::string> members, size_t own, std::span<const float> rows,
                               size_t width);
  // out ← the coordinate-wise median of the copies `take` (copies_ points
  // at them), and distances_ their distances to it, in one pass.
  void median(std::span<const float> rows, std::span<const size_t> take, std::span<float> out);
  // One iteration, v ← v + (1/m)·Σ clip(g_i − v, τ) with copy j at distance
  // distances_[j] from v, in one pass over the copies; where
  // `measure_after`, distances_ become their distances to the new v in it.
  void step(std::span<float> v, bool measure_after);
  // The pass's sums measured: distances_ ← √ of each copy's.
  void measured();

  ClipSpec spec_;
  int iterations_;
  ClippedGossip judge_;
  double tau_ = 0;
  std::vector<const float*> copies_;           // the copies taken this step
  std::vector<float> sorted_, delta_, scale_;  // one chunk of them, of v; their scales
  std::vector<double> distances_;
  std::vector<uint8_t> far_;  // this step's verdicts, per member
  std::vector<Sum8> sums_;    // a pass's squared distances, per copy
};

}  // namespace gossipd::protocol
