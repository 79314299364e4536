#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/view.h"

namespace gossipd::topology {

// How the inter-group exchange of a group is shared among its members.
enum class GroupSpread {
  kSpread,  // member k of a group handles the segments s ≡ k (mod group size)
  kRoot,    // the group's first member handles every segment (the paper's scheme)
  // member (s + round + c·g) mod group size handles segment s in round
  // `round` of cycle c = round / group size, in group g: every member owns
  // s once a cycle, and the groups' phases drift apart cycle by cycle, so
  // each owner hears a segment from every member of a partner group in
  // turn, not from one alone (--robust clip learns its radius from them).
  kRotate,
};

// Hierarchical groups: members with the same label form a group (`--group`,
// by default one per host). Groups are ordered by label, members inside a
// group by id, so every member derives the same structure from the view and
// the labels it has learned.
class Groups {
 public:
  // A member without a label forms a group of its own.
  Groups(const View& view, const std::map<std::string, std::string>& labels);

  size_t count() const { return groups_.size(); }
  const std::vector<std::string>& members(size_t group) const { return groups_.at(group); }
  const std::string& label(size_t group) const { return labels_.at(group); }
  std::optional<size_t> group_of(const std::string& id) const;
  // The member of `group` that handles `segment` in the inter-group
  // exchange of round `round` (which only kRotate reads).
  const std::string& segment_owner(size_t group, uint32_t segment, GroupSpread spread,
                                   uint64_t round = 0) const;

 private:
  std::vector<std::string> labels_;
  std::vector<std::vector<std::string>> groups_;
  std::map<std::string, size_t> group_index_;
};

// Crossover gossip between groups for one segment: a derangement over the
// groups (Draw{seed, view id, round, segment}); the owner of the segment in
// group g sends it to the owner in group p[g]. nullopt when there are fewer
// than two groups or `self` does not own the segment in its group.
struct GroupExchange {
  std::string send_to;
  std::string receive_from;
};
std::optional<GroupExchange> inter_group_exchange(const Groups& groups, uint32_t view_id,
                                                  const std::string& self, uint64_t seed, uint64_t round,
                                                  uint32_t segment, GroupSpread spread);

}  // namespace gossipd::topology
