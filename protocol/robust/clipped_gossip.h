#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace gossipd::protocol {

// ClippedGossip (He, Karimireddy, Jaggi, ICLR 2023) as --robust clip: a
// member mixes a peer's segment y into its own x as x ← x + w·clip(y − x, τ),
// clip(d, τ) = d·min(1, τ/‖d‖). A Byzantine peer then moves a replica by at
// most w·τ per segment it sends, whatever it sends; an honest peer within τ
// mixes as before.
struct ClipSpec {
  // A fixed radius (the L2 norm of a segment's difference); 0: adaptive.
  double tau = 0;
  // Adaptive: τ = kappa × the `quantile` of the segment's last `window`
  // distances, each remembered as at most `far` × the τ it met. A low
  // quantile holds while a quarter of them are honest (the first
  // Byzantine segments of a run may all come from one attacker), and the
  // cap keeps an attacker from raising τ faster than a factor of far at a
  // time.
  double kappa = 2;
  double quantile = 0.25;
  size_t window = 16;
  // Adaptive, before a segment has min_history distances: τ = cold × ‖x‖
  // (replicas start equal, so an honest peer is closer than that; clipping
  // one in the first rounds only slows its mixing a little).
  size_t min_history = 4;
  double cold = 0.01;
  // Naming: a reception is far when ‖y − x‖ ≥ far × τ, or when it was
  // refused as non-finite; a peer is named once most of its segments were
  // far in name_after of its rounds in a row (rounds it was not heard from
  // do not count either way). A named peer's segments are skipped from
  // then on, as lost ones. A segment's distances count only once it has
  // name_history of them: in the first rounds of a run the replicas move
  // apart from their common start, and distances grow quickly.
  double far = 4;
  uint32_t name_after = 3;
  size_t name_history = 8;
};

// The value at `q` of the way up the sorted `v` (rounded down); v not empty.
double quantile(std::vector<double> v, double q);

// What one member saw of one peer.
struct PeerClipping {
  uint64_t received = 0;    // segments mixed
  uint64_t clipped = 0;     // of them, clipped
  uint64_t refused = 0;     // refused as non-finite (never mixed)
  uint32_t far_rounds = 0;  // rounds in a row in which most of its segments were far
  bool named = false;       // reported as Byzantine (stays so for the run)
};

class ClippedGossip {
 public:
  explicit ClippedGossip(ClipSpec spec);

  // x ← x + weight·clip(y − x, τ) for segment `segment` from `peer`.
  // Returns whether the difference was clipped.
  bool mix(const std::string& peer, uint32_t segment, std::span<float> x, std::span<const float> y,
           float weight = 0.5f);
  // mix's bookkeeping, for a caller that mixes itself (push-sum, in one
  // pass over its numerators): a reception `distance` away from own values
  // of norm `own_norm` (read only where cold(segment)); returns the share
  // of the difference to add, `weight` or less where clipped.
  struct Share {
    float scale;
    bool clipped;
  };
  Share share(const std::string& peer, uint32_t segment, double distance, double own_norm, float weight);
  // The bookkeeping of one reception from `peer`, `distance` away and
  // clipped to radius `t`: counted in peers(), and in this round's tally
  // (far at far × t or beyond) where `judged`. Returns whether it was clipped.
  bool count(const std::string& peer, double distance, double t, bool judged);
  // Whether segment's radius still depends on the own values' norm.
  bool cold(uint32_t segment) const;

  // ‖b·y − a·x‖ and ‖x‖, in double, vectorized.
  static double distance(std::span<const float> x, double a, std::span<const float> y, double b);
  static double norm(std::span<const float> x);
  // A segment of `peer`'s refused this round as non-finite: counted in
  // peers(), and in this round's tally (as far) where `judged`.
  void refused(const std::string& peer, bool judged = true);
  // Verdicts passed elsewhere on `peer` this round (CenteredClip's owners):
  // `heard` of its receptions judged, `far` of them far.
  void tally(const std::string& peer, uint32_t heard, uint32_t far);
  // Whether `peer` was named (its segments are no longer mixed).
  bool named(const std::string& peer) const;
  // Ends a round's tally; returns the peers named by it.
  std::vector<std::string> end_round();

  std::map<std::string, PeerClipping> peers() const;
  const ClipSpec& spec() const { return spec_; }
  // The radius segment `segment` is clipped to now, for own values of norm `own_norm`.
  double tau(uint32_t segment, double own_norm) const;

 private:
  struct Tally {
    uint32_t heard = 0, far = 0;
  };
  void remember(uint32_t segment, double distance);

  ClipSpec spec_;
  std::map<uint32_t, std::deque<double>> distances_;  // per segment, the last `window`
  std::map<std::string, Tally> round_;                // this round's, per peer
  mutable std::mutex mu_;                             // peers_ (read by /status)
  std::map<std::string, PeerClipping> peers_;
};

}  // namespace gossipd::protocol
