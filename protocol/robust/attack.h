#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/robust/observations.h"

namespace gossipd::protocol {

// Byzantine behaviour as fault injection (--inject-byzantine): what a member
// that cannot be trusted sends in place of its own values. The attacker
// runs the protocol as an honest member would (it trains, mixes, keeps its
// deadlines); only what leaves it is changed, in the protocol's own
// currency (a gossip protocol's segments).
enum class AttackKind {
  kSignFlip,   // −x
  kScaled,     // k·x (k = magnitude, 1000 by default)
  kNoise,      // x + N(0, σ²) per value (σ = magnitude, 1 by default)
  kNonFinite,  // NaN in every value
  kStale,      // the values it sent first, replayed every round after
  kIpm,        // −ε·x (inner product manipulation; ε = magnitude, 0.1 by default)
  // x − z·σ per value, σ the spread of the received values around the own
  // ("a little is enough"; z = magnitude, 1 by default).
  kAlie,
  // y_r + ε·(y_r − x) to receiver r, y_r its values as last received from
  // it: pushes r away from the others (ClippedGossip's dissensus; ε =
  // magnitude, 1 by default). x until something came from r.
  kDissensus,
  kLabelFlip,  // poisoned data: trains on labels c − 1 − y, sends its values as they are
};

struct AttackSpec {
  AttackKind kind = AttackKind::kSignFlip;
  // kScaled: the factor; kNoise: the standard deviation; unused otherwise.
  // 0 takes the kind's default (default_magnitude).
  double magnitude = 0;
  uint64_t seed = 1;  // kNoise's draws, keyed further by (round, segment)
};

// The names users write: "sign_flip", "scaled", "noise", "non_finite",
// "stale", "ipm", "alie", "dissensus", "label_flip".
std::string_view attack_name(AttackKind kind);
std::optional<AttackKind> attack_from_name(std::string_view name);
std::vector<std::string> attack_names();
double default_magnitude(AttackKind kind);
// Whether the attack needs what the attacker receives (observe()): a
// protocol that does not show it to the attack refuses it.
bool attack_observes(AttackKind kind);
// Whether the attack is in the data, not in what is sent.
bool attack_poisons_data(AttackKind kind);

// One attacker's outbound values, segment by segment.
class SegmentAttack {
 public:
  explicit SegmentAttack(AttackSpec spec);

  // What the attacker sends to `to` as segment `segment` of round `round`
  // instead of `x`. The span stays valid until the next call.
  std::span<const float> apply(uint32_t segment, uint64_t round, std::span<const float> x,
                               std::string_view to = {});
  // `y` received from `peer` while the own values were `x`, for the attacks
  // that learn from it (attack_observes).
  void observe(std::string_view peer, uint32_t segment, std::span<const float> y, std::span<const float> x);
  bool observes() const { return attack_observes(spec_.kind); }

  const AttackSpec& spec() const { return spec_; }

 private:
  void alie(uint32_t segment);                            // on out_ (= x)
  void dissensus(uint32_t segment, std::string_view to);  // on out_ (= x)

  AttackSpec spec_;
  double magnitude_;
  std::vector<float> out_;
  std::map<uint32_t, std::vector<float>> first_;  // kStale: each segment as first sent
  AttackObservations seen_;                       // kAlie, kDissensus
};

}  // namespace gossipd::protocol
