#include "topology/split.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gossipd::topology {

BlockRange block_range(size_t count, size_t parts, size_t index) {
  const size_t base = count / parts;
  const size_t extra = count % parts;
  const size_t begin = index * base + std::min(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

std::vector<BlockRange> unit_split(size_t count, size_t parts, size_t unit) {
  if (parts == 0 || unit == 0) throw std::invalid_argument("unit_split: parts and unit must be at least 1");
  if (count % unit != 0) {
    throw std::invalid_argument(std::to_string(count) + " rows do not split into whole units of " +
                                std::to_string(unit));
  }
  const size_t units = count / unit;
  if (units < parts) {
    throw std::invalid_argument(std::to_string(count) + " rows make " + std::to_string(units) + " units of " +
                                std::to_string(unit) + ", fewer than the " + std::to_string(parts) +
                                " parts asked for");
  }
  std::vector<BlockRange> blocks;
  for (size_t p = 0; p < parts; ++p) {
    const BlockRange u = block_range(units, parts, p);
    blocks.push_back({u.begin * unit, u.end * unit});
  }
  return blocks;
}

}  // namespace gossipd::topology
