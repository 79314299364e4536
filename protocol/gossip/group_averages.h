#pragma once

#include <span>
#include <vector>

#include "protocol/collectives/error_feedback.h"
#include "protocol/collectives/group.h"
#include "protocol/wire/codec.h"

namespace gossipd::protocol {

// Hierarchical Crossover-SGD's two collectives inside a group (crossover.h),
// in float32 or in the run's codec. float32: the ring allreduce of the
// parameters, exact. In a codec, each travels as a change from a point
// every member of the group holds, bit for bit, so the codec rounds small
// numbers (protocol::CompressedAllreduce, which ends every member with the
// same bits, with error feedback per collective):
//   average: the change since the group's last shared result (start), until
//            a group has one (its first round, a new group, a failed round):
//            then float32;
//   share:   each owner's change to its segments since the average (base).
// An element that either leaves as NaN or an infinity (one member's
// contribution held one: averaged in, it would reach every replica of the
// group) keeps this member's own value from before it; every member of a group holds
// the same result, so all agree which elements (and, in a codec, the next
// average travels in float32: their results differ there). Each returns
// how many. A sum does not say who sent one.
class GroupAverages {
 public:
  explicit GroupAverages(CodecSpec codec) : codec_(codec), mean_(codec), shared_(codec) {}

  // (1) params ← the group's mean.
  size_t average(Group& group, std::span<float> params);
  // (3) params ← the average's result with each member's `owned` ranges as
  // that member left them (each element is owned by one member, or none).
  // The members' `round`s are summed too (in float32 with the share; in a
  // codec in a float32 ring of their own before it): where they differ
  // (the owners were drawn for different rounds, so some elements had two
  // owners and some none: measured, a replica's norm 30.7 → 50.9 → 0.4),
  // params are left as they were and every member throws RoundsApart with
  // the furthest round (at most 64 past its own; a slot that holds no
  // round counts as apart); in a codec the group then starts afresh.
  // `carried` (float32 only): more floats summed with the share, each
  // member's own in its slots and zeros in the others' (ShareBound's radii);
  // they hold the sum on return.
  size_t share(Group& group, std::span<float> params, const std::vector<BlockRange>& owned, uint64_t round,
               std::span<float> carried = {});
  // A new group, or a round that failed part way: the members' starts may
  // differ, and the residuals are owed against parameters no longer held.
  void reset();

 private:
  // share's float32 sum: 2 floats per member after the parameters, this
  // member's round in its own; then whether all hold the same.
  void carry_round(const Group& group, uint64_t round);
  void check_rounds(const Group& group, uint64_t round) const;
  // A codec's check, before its share: the slots alone, buffer_ kept.
  void check_rounds_apart(Group& group, uint64_t round);

  CodecSpec codec_;
  ErrorFeedback mean_, shared_;
  std::vector<float> start_;   // the group's last shared result (empty: none known)
  std::vector<float> base_;    // the average's result this round
  std::vector<float> buffer_;  // a collective's result before params take it
  bool apart_ = false;         // this round's average refused an element
};

// params ← result, but for the elements of result that are NaN or an
// infinity (params keeps its own there); returns how many. Spans of equal
// size.
size_t adopt_finite(std::span<float> params, std::span<const float> result);

}  // namespace gossipd::protocol
