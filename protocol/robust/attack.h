#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
};

struct AttackSpec {
  AttackKind kind = AttackKind::kSignFlip;
  // kScaled: the factor; kNoise: the standard deviation; unused otherwise.
  // 0 takes the kind's default (default_magnitude).
  double magnitude = 0;
  uint64_t seed = 1;  // kNoise's draws, keyed further by (round, segment)
};

// The names users write: "sign_flip", "scaled", "noise", "non_finite", "stale".
std::string_view attack_name(AttackKind kind);
std::optional<AttackKind> attack_from_name(std::string_view name);
std::vector<std::string> attack_names();
double default_magnitude(AttackKind kind);

// One attacker's outbound values, segment by segment.
class SegmentAttack {
 public:
  explicit SegmentAttack(AttackSpec spec);

  // What the attacker sends as segment `segment` of round `round` instead of
  // `x`. The span stays valid until the next call.
  std::span<const float> apply(uint32_t segment, uint64_t round, std::span<const float> x);

  const AttackSpec& spec() const { return spec_; }

 private:
  AttackSpec spec_;
  double magnitude_;
  std::vector<float> out_;
  std::map<uint32_t, std::vector<float>> first_;  // kStale: each segment as first sent
};

}  // namespace gossipd::protocol
