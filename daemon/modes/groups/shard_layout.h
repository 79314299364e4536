#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "topology/split.h"

namespace gossipd::daemon {

// Compute groups' parameter server, sharded over every member: the
// parameters cut into one contiguous shard per initial member (shard j is
// the j-th of the sorted initial members'), and the shards a group member
// pushes and pulls for its group. Pure: every member derives the same
// layout from the same sizes and view.
class ShardLayout {
 public:
  // Throws std::invalid_argument when there are more members than parameters.
  ShardLayout(size_t params, std::vector<std::string> initial_members);

  size_t count() const { return initial_.size(); }
  size_t params() const { return params_; }
  topology::BlockRange range(size_t shard) const;

  // The owner of `shard` among the members `alive` (sorted): its initial
  // owner while that one is alive, otherwise alive[shard mod |alive|], so a
  // shard moves only when its owner leaves.
  std::string owner(size_t shard, const std::vector<std::string>& alive) const;
  // The shards `alive[...]` == `id` owns.
  std::vector<size_t> owned_by(const std::string& id, const std::vector<std::string>& alive) const;

  // The shards rank `rank` of a group of `size` members pushes and pulls,
  // [first, last): an even split of the shard indices, so a group's slices
  // tile the parameters in order.
  std::pair<size_t, size_t> slice(size_t rank, size_t size) const;
  // Floats per rank of that split (a reduce-scatter's and allgather's counts).
  std::vector<size_t> slice_counts(size_t size) const;

 private:
  size_t params_;
  std::vector<std::string> initial_;  // sorted
};

}  // namespace gossipd::daemon
