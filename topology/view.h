#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gossipd::topology {

// A membership view: sorted, unique member ids and the view's id (membership
// derives it from the member table, so members that agree on the table
// agree on the id, and a changed table gets another). Every function in topology/ is a pure function of a
// view and a few integers, so members agree on who talks to whom without messages.
class View {
 public:
  View() = default;
  // Sorts and de-duplicates `members`; throws std::invalid_argument for an empty id.
  View(uint32_t id, std::vector<std::string> members);

  uint32_t id() const { return id_; }
  size_t size() const { return members_.size(); }
  const std::vector<std::string>& members() const { return members_; }
  const std::string& member(size_t index) const { return members_.at(index); }
  std::optional<size_t> index_of(const std::string& id) const;
  bool contains(const std::string& id) const { return index_of(id).has_value(); }

  bool operator==(const View&) const = default;

 private:
  uint32_t id_ = 0;
  std::vector<std::string> members_;
};

// A view's id as membership derives it: FNV-1a over the (id, since_round)
// pairs in id order (since_round: the round a member entered; 0 for those a
// cluster starts with). `members` must be sorted by id.
uint32_t view_hash(const std::vector<std::pair<std::string, uint64_t>>& members);

// The view a cluster starts in: `ids` (any order), every one since round 0.
View starting_view(std::vector<std::string> ids);

// The two neighbours of `index` on the ring of the view's order.
struct RingNeighbours {
  size_t left = 0;
  size_t right = 0;
};
RingNeighbours ring_neighbours(size_t size, size_t index);

}  // namespace gossipd::topology
