#include "protocol/robust/attack.h"

#include <array>
#include <cmath>
#include <limits>
#include <random>

namespace gossipd::protocol {
namespace {

constexpr std::array<std::pair<AttackKind, std::string_view>, 9> kNames{{
    {AttackKind::kSignFlip, "sign_flip"},
    {AttackKind::kScaled, "scaled"},
    {AttackKind::kNoise, "noise"},
    {AttackKind::kNonFinite, "non_finite"},
    {AttackKind::kStale, "stale"},
    {AttackKind::kIpm, "ipm"},
    {AttackKind::kAlie, "alie"},
    {AttackKind::kDissensus, "dissensus"},
    {AttackKind::kLabelFlip, "label_flip"},
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
    case AttackKind::kAlie:
    case AttackKind::kDissensus:
      return 1;
    case AttackKind::kIpm:
      return 0.1;
    default:
      return 0;
  }
}

bool attack_observes(AttackKind kind) { return kind == AttackKind::kAlie || kind == AttackKind::kDissensus; }

bool attack_poisons_data(AttackKind kind) { return kind == AttackKind::kLabelFlip; }

SegmentAttack::SegmentAttack(AttackSpec spec)
    : spec_(spec), magnitude_(spec.magnitude != 0 ? spec.magnitude : default_magnitude(spec.kind)) {}

void SegmentAttack::observe(std::string_view peer, uint32_t segment, std::span<const float> y,
                            std::span<const float> x) {
  if (observes()) seen_.observe(peer, segment, y, x);
}

std::span<const float> SegmentAttack::apply(uint32_t segment, uint64_t round, std::span<const float> x,
                                            std::string_view to) {
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
    case AttackKind::kIpm:
      for (float& v : out_) v = static_cast<float>(-magnitude_ * v);
      break;
    case AttackKind::kAlie:
      alie(segment);
      break;
    case AttackKind::kDissensus:
      dissensus(segment, to);
      break;
    case AttackKind::kLabelFlip:
      break;
  }
  return out_;
}

void SegmentAttack::alie(uint32_t segment) {
  const auto sigma = seen_.spread(segment);
  if (sigma.size() != out_.size()) return;
  const auto z = static_cast<float>(magnitude_);
  for (size_t i = 0; i < out_.size(); ++i) out_[i] -= z * sigma[i];
}

void SegmentAttack::dissensus(uint32_t segment, std::string_view to) {
  const auto theirs = seen_.last(to, segment);
  if (theirs.size() != out_.size()) return;
  const auto e = static_cast<float>(magnitude_);
  for (size_t i = 0; i < out_.size(); ++i) out_[i] = theirs[i] + e * (theirs[i] - out_[i]);
}

}  // namespace gossipd::protocol
