#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "topology/view.h"

namespace gossipd::topology {

// Who sends a segment to whom in one Crossover-SGD round ("fair peer
// selection"): target[i] is the index member i sends to. A derangement — a
// permutation with no fixed point — so every member sends exactly one copy
// and receives exactly one (in-degree = out-degree = 1), and the mixing
// matrix ½(I + P) is doubly stochastic.
//
// Drawn uniformly among all derangements of n (rejection: shuffle, retry
// while a fixed point remains; about e tries on average) from
// Draw{seed, view id, round, segment}. The authors' sequential roulette is
// not exactly uniform; this is. n = 0 or 1: empty (nobody to exchange with).
std::vector<uint32_t> derangement(size_t n, uint64_t seed, uint32_t view_id, uint64_t round,
                                  uint32_t segment);

// This member's two partners for a segment: whom it sends to and whom it
// receives from. nullopt when the view has fewer than two members or does
// not contain `self`.
struct Exchange {
  size_t send_to = 0;
  size_t receive_from = 0;
};
std::optional<Exchange> crossover_exchange(const View& view, size_t self, uint64_t seed, uint64_t round,
                                           uint32_t segment);

}  // namespace gossipd::topology
