#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gossipd::topology {

// SGP's time-varying directed exponential graph (Assran et al. 2019): at
// round r member i sends to i + 2^(r mod L) (mod n) with L = ⌊log2(n−1)⌋ + 1,
// cycling through the hop lengths 1, 2, 4, ... < n. With `peers` > 1 it
// sends to the next `peers` hop lengths of the cycle at once
// (2^((r·peers + j) mod L), j < peers; at most L distinct).
// Returns the out-peer indices (empty for n < 2).
std::vector<size_t> exponential_out_peers(size_t n, size_t self, uint64_t round, size_t peers = 1);

// The members that send to `self` in that round (the same hop lengths, backwards).
std::vector<size_t> exponential_in_peers(size_t n, size_t self, uint64_t round, size_t peers = 1);

// Number of distinct hop lengths L (0 for n < 2).
size_t exponential_hops(size_t n);

}  // namespace gossipd::topology
