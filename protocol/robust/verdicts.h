#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace gossipd::protocol {

// The verdicts a block's owner passes on each member's copy in BTARD's
// aggregation (CenteredClip): far (kFar × τ or beyond, or not finite) or
// not, one bit per member, carried in the allgather beside the owner's
// block so that every member tallies every owner's verdicts and names the
// same members at the same step. A member is then judged on all its
// blocks, not one: an honest member whose data sets one block of its
// momentum apart (a small shard's classes, in the output layer) is far at
// that block's owner alone, an attacker at most of them.
//
// On the wire: kBitsPerWord bits in each float, as the integer they make
// (exact in a float's 24-bit mantissa, and finite).
struct Verdicts {
  static constexpr size_t kBitsPerWord = 16;

  // Floats that carry the verdicts on `members` members.
  static size_t words(size_t members) { return (members + kBitsPerWord - 1) / kBitsPerWord; }
  // out (words(far.size()) floats) ← far, a 0/1 per member.
  static void encode(std::span<const uint8_t> far, std::span<float> out);
  // The 0/1 per member of `members` that `in` (words(members) floats)
  // carries; nullopt where a float is not an integer in [0, 2^16) or a
  // bit past the last member is set (a malformed verdict).
  static std::optional<std::vector<uint8_t>> decode(std::span<const float> in, size_t members);
};

}  // namespace gossipd::protocol
