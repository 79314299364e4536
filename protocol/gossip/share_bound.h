#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "protocol/collectives/group.h"
#include "protocol/collectives/segment_table.h"
#include "protocol/robust/clipped_gossip.h"

namespace gossipd::protocol {

// Hierarchical Crossover-SGD's step (3) under --robust clip. The share
// hands every member each segment as its owner left it, so a Byzantine
// owner could write anything there, and the group's CenteredClip in (1)
// would meet it next round in every member's copy alike. Under the defence
// each owner's change to a segment since the group's robust mean (1) is
// clipped, at every member, to one bound: half the lower median over the
// group's members of their ClippedGossip radius for that segment, which
// the share sums beside the parameters (a member that writes something
// absurd there moves the lower median no further than an honest one's
// radius while fewer than half are Byzantine). An honest owner's mix moves
// its segment by at most half its own radius, so it is left as it is unless
// its radius is above the lower median and its partner far; whatever a
// Byzantine owner writes moves the segment no further than an honest mix
// at that radius. Each clip is counted in the owner's record (not judged:
// the group's mean judges its members). An owner that most of the group's
// members have named (its copies in (1) far from their mean) has its
// change undone: each member's radius for a segment travels negated when
// it has named the segment's owner, and a segment so marked by more than
// half the members keeps the group's mean, no vote counted of a member
// that more than half named. Every member clips the same changes by the
// same bounds: the group still ends with the same bits.
class ShareBound {
 public:
  // After (1): `params` hold the group's robust mean, the point each
  // owner's change is measured from; this member's radii go in its slots,
  // each with this member's vote on `owners[s]` (`named`: whether this
  // member has named it).
  void begin(const Group& group, const SegmentTable& segments, std::span<const float> params,
             const ClippedGossip& judge, std::span<const std::string> owners,
             const std::function<bool(const std::string&)>& named);
  // Every member's radius per segment (negated where it named the owner),
  // this member's in its slots and zeros elsewhere: the share sums them
  // (GroupAverages::share's carried).
  std::span<float> slots() { return slots_; }
  // After (3), the slots summed: each segment's change since begin clipped
  // to its bound; `owners[s]` the member that owned segment s this round.
  // Every other owner's change is counted in its record on `judge`.
  // Returns the segments clipped.
  size_t clip(const Group& group, const SegmentTable& segments, std::span<const std::string> owners,
              std::span<float> params, ClippedGossip& judge);
  // The bound of each segment this round (clip's).
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  // bounds_ from the summed slots.
  void bound_each(const Group& group, std::span<const std::string> owners);
  // Per segment, whether its owner's change is undone: more than half the
  // members named the owner, counting no vote of a member that more than
  // half named (where everyone names everyone, as when half the group is
  // Byzantine and CenteredClip has no majority, nothing is undone).
  std::vector<bool> undone(const Group& group, std::span<const std::string> owners) const;

  std::vector<float> base_;     // the group's robust mean, from begin
  std::vector<float> slots_;    // every member's radius per segment
  std::vector<double> bounds_;  // per segment: half the lower median of the members' radii, or 0
};

}  // namespace gossipd::protocol
