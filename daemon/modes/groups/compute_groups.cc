#include "daemon/modes/groups/compute_groups.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace gossipd::topology {

std::string compute_group_label(size_t index) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "cg%04zu", index);
  return buf;
}

std::map<std::string, std::string> compute_group_labels(const std::vector<std::string>& members,
                                                        size_t groups,
                                                        const std::vector<std::string>& order) {
  if (groups == 0 || members.size() % groups != 0) {
    throw std::invalid_argument(std::to_string(groups) + " compute groups do not divide " +
                                std::to_string(members.size()) + " workers into groups of equal size");
  }
  std::vector<std::string> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  if (!order.empty()) {
    std::vector<std::string> listed = order;
    std::sort(listed.begin(), listed.end());
    if (listed != sorted)
      throw std::invalid_argument("the order does not list every one of the " +
                                  std::to_string(members.size()) + " members exactly once");
    sorted = order;
  }
  const size_t per_group = sorted.size() / groups;
  std::map<std::string, std::string> labels;
  for (size_t r = 0; r < sorted.size(); ++r) labels[sorted[r]] = compute_group_label(r / per_group);
  return labels;
}

}  // namespace gossipd::topology
