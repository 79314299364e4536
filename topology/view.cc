#include "topology/view.h"

#include <algorithm>
#include <stdexcept>

namespace gossipd::topology {

View::View(uint32_t id, std::vector<std::string> members) : id_(id), members_(std::move(members)) {
  for (const auto& m : members_) {
    if (m.empty()) throw std::invalid_argument("a member id is empty");
  }
  // Callers mostly hand them sorted (a membership's table is a map): a
  // sort of a thousand sorted strings at every view change was most of a
  // 1,000-member cluster's CPU after an eviction.
  if (!std::is_sorted(members_.begin(), members_.end())) std::sort(members_.begin(), members_.end());
  members_.erase(std::unique(members_.begin(), members_.end()), members_.end());
}

std::optional<size_t> View::index_of(const std::string& id) const {
  auto it = std::lower_bound(members_.begin(), members_.end(), id);
  if (it == members_.end() || *it != id) return std::nullopt;
  return static_cast<size_t>(it - members_.begin());
}

uint32_t view_hash(const std::vector<std::pair<std::string, uint64_t>>& members) {
  uint32_t h = 2166136261u;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 16777619u;
  };
  for (const auto& [id, since] : members) {
    mix(id.data(), id.size() + 1);
    mix(&since, sizeof since);
  }
  return h;
}

View starting_view(std::vector<std::string> ids) {
  const View sorted(0, std::move(ids));
  std::vector<std::pair<std::string, uint64_t>> members;
  for (const auto& id : sorted.members()) members.emplace_back(id, 0);
  return View(view_hash(members), sorted.members());
}

RingNeighbours ring_neighbours(size_t size, size_t index) {
  if (size == 0) throw std::invalid_argument("ring of no members");
  return {(index + size - 1) % size, (index + 1) % size};
}

}  // namespace gossipd::topology
