#include "daemon/modes/groups/shard_layout.h"

#include <algorithm>
#include <stdexcept>

namespace gossipd::daemon {

ShardLayout::ShardLayout(size_t params, std::vector<std::string> initial_members)
    : params_(params), initial_(std::move(initial_members)) {
  std::sort(initial_.begin(), initial_.end());
  if (initial_.empty() || initial_.size() > params_) {
    throw std::invalid_argument(std::to_string(initial_.size()) + " members cannot each own a shard of " +
                                std::to_string(params_) + " parameters");
  }
}

topology::BlockRange ShardLayout::range(size_t shard) const {
  return topology::block_range(params_, initial_.size(), shard);
}

std::string ShardLayout::owner(size_t shard, const std::vector<std::string>& alive) const {
  const std::string& first = initial_.at(shard);
  if (std::binary_search(alive.begin(), alive.end(), first)) return first;
  if (alive.empty()) return "";
  return alive[shard % alive.size()];
}

std::vector<size_t> ShardLayout::owned_by(const std::string& id,
                                          const std::vector<std::string>& alive) const {
  std::vector<size_t> out;
  for (size_t j = 0; j < count(); ++j) {
    if (owner(j, alive) == id) out.push_back(j);
  }
  return out;
}

std::pair<size_t, size_t> ShardLayout::slice(size_t rank, size_t size) const {
  const topology::BlockRange r = topology::block_range(count(), size, rank);
  return {r.begin, r.end};
}

std::vector<size_t> ShardLayout::slice_counts(size_t size) const {
  std::vector<size_t> counts(size, 0);
  for (size_t r = 0; r < size; ++r) {
    const auto [first, last] = slice(r, size);
    if (first < last) counts[r] = range(last - 1).end - range(first).begin;
  }
  return counts;
}

}  // namespace gossipd::daemon
