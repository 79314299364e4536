#include "protocol/gossip/group_averages.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "protocol/collectives/compressed.h"
#include "protocol/collectives/ring.h"
#include "protocol/wire/codec.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {

size_t adopt_finite(std::span<float> params, std::span<const float> result) {
  if (all_finite(std::as_bytes(result))) {  // the common case: one pass that vectorizes
    std::copy(result.begin(), result.end(), params.begin());
    return 0;
  }
  size_t refused = 0;
  for (size_t i = 0; i < result.size(); ++i) {
    if (std::isfinite(result[i])) {
      params[i] = result[i];
    } else {
      ++refused;
    }
  }
  return refused;
}

// Each collective works in buffer_ and leaves params as they were until
// adopt_finite: the member's own values, for the elements it refuses.
size_t GroupAverages::average(Group& group, std::span<float> params) {
  const float inv = 1.0f / static_cast<float>(group.size());
  if (codec_.lossless() || start_.size() != params.size()) {
    buffer_.assign(params.begin(), params.end());
    AllreduceRing(group, buffer_).run();
    for (float& v : buffer_) v *= inv;
  } else {
    buffer_.resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) buffer_[i] = params[i] - start_[i];
    CompressedAllreduce(group, buffer_, mean_).run();
    for (size_t i = 0; i < params.size(); ++i) buffer_[i] = start_[i] + buffer_[i] * inv;
  }
  const size_t refused = adopt_finite(params, buffer_);
  apart_ = apart_ || refused > 0;
  if (!codec_.lossless()) base_.assign(params.begin(), params.end());
  return refused;
}

namespace {

// A round in two floats of 20 bits each: exact in float32, and in any sum
// where the others add zeros.
constexpr uint64_t kRoundBits = 20;
constexpr float kRoundPart = static_cast<float>(uint64_t{1} << kRoundBits);
// The furthest a member follows another's round in one step: members apart
// by a view change are a few rounds apart, and a member that wrote some
// absurd round (a Byzantine one) cannot send the others that far ahead.
constexpr uint64_t kMostRoundsAhead = 64;

// The round in a member's two slots; none where they hold no whole
// number in range (a member that wrote something else there).
std::optional<uint64_t> round_in(float high, float low) {
  const auto part = [](float v) { return v >= 0 && v < kRoundPart && v == std::floor(v); };
  if (!part(high) || !part(low)) return std::nullopt;
  return static_cast<uint64_t>(high) << kRoundBits | static_cast<uint64_t>(low);
}

}  // namespace

void GroupAverages::carry_round(const Group& group, uint64_t round) {
  const size_t at = buffer_.size();
  buffer_.resize(at + 2 * group.size(), 0.0f);
  buffer_[at + 2 * group.rank()] = static_cast<float>(round >> kRoundBits);
  buffer_[at + 2 * group.rank() + 1] = static_cast<float>(round & ((uint64_t{1} << kRoundBits) - 1));
}

void GroupAverages::check_rounds(const Group& group, uint64_t round) const {
  const size_t at = buffer_.size() - 2 * group.size();
  uint64_t latest = round;
  bool apart = false;
  for (size_t r = 0; r < group.size(); ++r) {
    const std::optional<uint64_t> theirs = round_in(buffer_[at + 2 * r], buffer_[at + 2 * r + 1]);
    apart = apart || theirs != round;
    if (theirs) latest = std::max(latest, std::min(*theirs, round + kMostRoundsAhead));
  }
  if (apart) throw RoundsApart(group.node().id(), round, latest);
}

// In a codec the round slots would be rounded with the rest: they travel
// alone first, in float32 (a ring of 2 floats a member). Apart, the members
// throw before the share; the average's residual and start were owed
// against a round the worker undoes, so the group starts afresh.
void GroupAverages::check_rounds_apart(Group& group, uint64_t round) {
  std::vector<float> parameters;
  parameters.swap(buffer_);
  carry_round(group, round);
  AllreduceRing(group, buffer_).run();
  try {
    check_rounds(group, round);
  } catch (const RoundsApart&) {
    reset();
    throw;
  }
  buffer_.swap(parameters);
}

size_t GroupAverages::share(Group& group, std::span<float> params, const std::vector<BlockRange>& owned,
                            uint64_t round, std::span<float> carried) {
  buffer_.assign(params.size(), 0.0f);
  const bool lossy = !codec_.lossless();
  if (lossy && !carried.empty())
    throw ProtocolConfigError("group share: floats carried beside a codec's share");
  for (const BlockRange& r : owned) {
    for (size_t i = r.begin; i < r.end; ++i) buffer_[i] = lossy ? params[i] - base_[i] : params[i];
  }
  if (!lossy) {  // every element has one owner: the sum is the owner's value, exactly
    buffer_.insert(buffer_.end(), carried.begin(), carried.end());
    carry_round(group, round);
    AllreduceRing(group, buffer_).run();
    check_rounds(group, round);
    std::copy_n(buffer_.begin() + static_cast<std::ptrdiff_t>(params.size()), carried.size(),
                carried.begin());
    buffer_.resize(params.size());
    return adopt_finite(params, buffer_);
  }
  check_rounds_apart(group, round);
  CompressedAllreduce(group, buffer_, shared_).run();
  for (size_t i = 0; i < params.size(); ++i) buffer_[i] = base_[i] + buffer_[i];
  const size_t refused = adopt_finite(params, buffer_);
  start_.assign(params.begin(), params.end());
  // Refused elements kept each member's own value: the members' results
  // differ there, so the next average starts in float32.
  if (apart_ || refused > 0) start_.clear();
  apart_ = false;
  return refused;
}

void GroupAverages::reset() {
  start_.clear();
  apart_ = false;
  mean_.clear();
  shared_.clear();
}

}  // namespace gossipd::protocol
