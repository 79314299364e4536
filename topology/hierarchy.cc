#include "topology/hierarchy.h"

#include "topology/derangement.h"

namespace gossipd::topology {

Groups::Groups(const View& view, const std::map<std::string, std::string>& labels) {
  std::map<std::string, std::vector<std::string>> by_label;
  for (const auto& id : view.members()) {
    auto it = labels.find(id);
    // An unlabelled member gets a label no real label can equal.
    by_label[it != labels.end() ? it->second : "\x01" + id].push_back(id);
  }
  for (auto& [label, members] : by_label) {
    for (const auto& m : members) group_index_[m] = groups_.size();
    labels_.push_back(label);
    groups_.push_back(std::move(members));  // already sorted: the view is
  }
}

std::optional<size_t> Groups::group_of(const std::string& id) const {
  auto it = group_index_.find(id);
  if (it == group_index_.end()) return std::nullopt;
  return it->second;
}

const std::string& Groups::segment_owner(size_t group, uint32_t segment, GroupSpread spread,
                                         uint64_t round) const {
  const auto& m = groups_.at(group);
  switch (spread) {
    case GroupSpread::kRoot:
      return m.front();
    case GroupSpread::kRotate: {  // each cycle of |m| rounds, a phase of its own per group
      const uint64_t cycle = round / m.size();
      return m[(segment + round + cycle * group) % m.size()];
    }
    default:
      return m[segment % m.size()];
  }
}

std::optional<GroupExchange> inter_group_exchange(const Groups& groups, uint32_t view_id,
                                                  const std::string& self, uint64_t seed, uint64_t round,
                                                  uint32_t segment, GroupSpread spread) {
  auto g = groups.group_of(self);
  if (!g || groups.count() < 2 || groups.segment_owner(*g, segment, spread, round) != self)
    return std::nullopt;
  const auto p = derangement(groups.count(), seed, view_id, round, segment);
  GroupExchange e;
  e.send_to = groups.segment_owner(p[*g], segment, spread, round);
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == *g) e.receive_from = groups.segment_owner(i, segment, spread, round);
  }
  return e;
}

}  // namespace gossipd::topology
