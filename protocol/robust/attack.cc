#include "protocol/robust/attack.h"

#include <array>
#include <cmath>
#include <limits>
#include <random>

namespace gossipd::protocol {
namespace {

constexpr std::array<std::pair<AttackKind, std::string_view>, 5> kNames{{
    {AttackKind::kSignFlip, "sign_flip"},
    {AttackKind::kScaled, "scaled"},
    {AttackKind::kNoise, "noise"},
    {AttackKind::kNonFinite, "non_finite"},
    {AttackKind::kStale, "stale"},
}};

// One stream per (seed, round, segment): the attack is reproducible and
// does not depend on the order segments are sent in.
std::mt19937_64 stream(uint64_t seed, uint64_t round, uint32_t segment) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(round), static_cast<uint32_t>(round >> 32), segment};
  return std::mt19937_64(seq);
}

}  // namespace

std::string_view attack_name(AttackKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  return "unknown";
}

std::optional<AttackKind> attack_from_name(std::string_view name) {
  for (const auto& [k, n] : kNames)
    if (n == name) return k;
  return std::nullopt;
}

std::vector<std::string> attack_names() {
  std::vector<std::string> out;
  for (const auto& [k, name] : kNames) out.emplace_back(name);
  return out;
}

double default_magnitude(AttackKind kind) {
  switch (kind) {
    case AttackKind::kScaled:
      return 1000;
    case AttackKind::kNoise:
      return 1;
    default:
      return 0;
  }
}

SegmentAttack::SegmentAttack(AttackSpec spec)
    : spec_(spec), magnitude_(spec.magnitude != 0 ? spec.magnitude : default_magnitude(spec.kind)) {}

std::span<const float> SegmentAttack::apply(uint32_t segment, uint64_t round, std::span<const float> x) {
  out_.assign(x.begin(), x.end());
  switch (spec_.kind) {
    case AttackKind::kSignFlip:
      for (float& v : out_) v = -v;
      break;
    case AttackKind::kScaled:
      for (float& v : out_) v = static_cast<float>(v * magnitude_);
      break;
    case AttackKind::kNoise: {
      auto gen = stream(spec_.seed, round, segment);
      std::normal_distribution<double> noise(0.0, magnitude_);
      for (float& v : out_) v = static_cast<float>(v + noise(gen));
      break;
    }
    case AttackKind::kNonFinite:
      for (float& v : out_) v = std::numeric_limits<float>::quiet_NaN();
      break;
    case AttackKind::kStale: {
      auto [it, first] = first_.try_emplace(segment, out_);
      if (!first && it->second.size() == out_.size()) out_ = it->second;
      break;
    }
  }
  return out_;
}

}  // namespace gossipd::protocol
