#pragma once

#include <cstddef>
#include <vector>

namespace gossipd::topology {

// Elements [begin, end) of something split into blocks.
struct BlockRange {
  size_t begin = 0;
  size_t end = 0;
  size_t size() const { return end - begin; }
  bool operator==(const BlockRange&) const = default;
};

// `count` elements split into `parts` contiguous blocks whose sizes differ by
// at most one (the first count % parts get one more). Blocks may be empty.
BlockRange block_range(size_t count, size_t parts, size_t index);

// `count` elements split into `parts` blocks of whole `unit`s (sizes differ
// by at most one unit, the first blocks the larger): an image's rows over
// the processes of a grid column, `unit` rows being what the pooling layers
// below need to never straddle a split. Throws std::invalid_argument when
// `count` is not a multiple of `unit` or there are fewer units than parts.
std::vector<BlockRange> unit_split(size_t count, size_t parts, size_t unit);

}  // namespace gossipd::topology
