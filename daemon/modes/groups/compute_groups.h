#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace gossipd::topology {

// Compute groups (--algo groups --compute-groups g): the initial members,
// sorted by id (or in `order`, --compute-group-order: gossipctl tune lists
// them by speed), split into g groups of N/g consecutive ones. Group i's
// label is "cg" and i in four digits, so topology::Groups orders the
// groups by index. The assignment depends only on the initial members: a
// member that dies leaves its group one smaller, and the others keep theirs.
//
// Throws std::invalid_argument when g is 0 or does not divide N, or when a
// non-empty `order` does not list every member exactly once.
std::map<std::string, std::string> compute_group_labels(const std::vector<std::string>& members,
                                                        size_t groups,
                                                        const std::vector<std::string>& order = {});

// The label of group `index`.
std::string compute_group_label(size_t index);

}  // namespace gossipd::topology
