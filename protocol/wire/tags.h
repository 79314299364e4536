#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gossipd::protocol {

// Collective tags. The mailbox keys messages by (tag, seq, sender): two users
// of one tag would take each other's messages, so every user of the
// transport gets a range of its own from one allocator. Ranges are laid out
// at compile time, each aligned to its size, one after the other: they cannot
// meet (tests/protocol/tags_test.cc checks every pair), and a new user is one
// line in each of the two lists below.
namespace tags {

enum class User : uint8_t {
  kStartup,            // the gossip workers' start-up barrier (one tag)
  kAllreduce,          // AllReduce-SGD's ring over the start-up members (one tag)
  kCrossover,          // CrossoverGossip segments (seq = round); pacing notes in the upper half
  kHierarchical,       // HierarchicalCrossover's inter-group segments; pacing notes likewise
  kPushSum,            // PushSumGossip segments; pacing notes likewise
  kHierarchicalGroup,  // a group's collectives, per (view, group)
  kConsensus,          // consensus-distance measurements, per view
  kReformedRing,       // AllReduce's ring re-formed over a new view, per view
  kFinalAverage,       // the members' exact average at the end of training, per view
  // The modes' own: a block the modes' registry lays out, a range for each
  // mode that asks (daemon/worker/mode_set.h), so that no list here names
  // a mode.
  kModes,
  kDataPath,    // direct data path announcements (one tag; seq = the group's tag)
  kHostLevels,  // a two-level allreduce's groups in and across hosts, per (parent tag, group)
  kCount
};

// Size of each user's range, as a power of two, in the order of User.
constexpr std::array<uint8_t, static_cast<size_t>(User::kCount)> kRangeBits{
    0,  0,  16, 16, 16,  // startup, allreduce, three gossip protocols
    24,                  // hierarchical groups: 2^16 views x 256 groups
    22, 22, 22,          // consensus, re-formed rings, final averages: 2^22 views each
    28,                  // the modes' block: room for sixteen ranges of 2^24
    0,                   // data path announcements
    24,                  // two-level groups: 2^16 parent tags x 256 groups
};

// Pacing notes ("I am in this round") of a gossip protocol: its tag with
// this bit, inside its own range (gossip ranges hold 2^16 tags).
constexpr uint32_t kReadyBit = 0x8000;
constexpr uint32_t ready_tag(uint32_t gossip_tag) { return gossip_tag | kReadyBit; }

// [first, first + count).
struct Range {
  uint32_t first = 0;
  uint32_t count = 1;
  constexpr bool contains(uint32_t tag) const { return tag >= first && tag - first < count; }
  constexpr bool meets(const Range& o) const { return first < o.first + o.count && o.first < first + count; }
  // The index-th tag, the index taken modulo the size (a view id wraps).
  constexpr uint32_t at(uint64_t index) const { return first + static_cast<uint32_t>(index % count); }
};

// The user's range. Tag 0 is left unused (a message that never set its tag).
constexpr Range range(User user) {
  uint64_t next = 1;
  for (size_t u = 0;; ++u) {
    const uint64_t size = uint64_t{1} << kRangeBits[u];
    next = (next + size - 1) / size * size;  // aligned to its size
    if (u == static_cast<size_t>(user))
      return Range{static_cast<uint32_t>(next), static_cast<uint32_t>(size)};
    next += size;
  }
}

// The one tag of a single-tag user, or the first of a range.
constexpr uint32_t first(User user) { return range(user).first; }

// Everything fits below 2^32.
static_assert(uint64_t{range(User::kHostLevels).first} + range(User::kHostLevels).count <=
              (uint64_t{1} << 32));

}  // namespace tags
}  // namespace gossipd::protocol
