#pragma once

#include <cstddef>

#include "daemon/modes/sparse/net/sparse_net.h"

namespace gossipd::trainer::sparse {

// Lanes (samples) a block of activations is processed in: one chunk of
// accumulators per neuron, kept in vector registers.
constexpr size_t kLaneChunk = 16;

// A block of activations, neuron-major: neuron j's values for the block's
// samples are y[j * stride + lane], lane < lanes (a multiple of kLaneChunk,
// at most stride).
struct Block {
  size_t stride = 0;
  size_t lanes = 0;
};

// One layer of the challenge's inference on a block: for every neuron j of
// `layer`,   z = Σ_e w_e · y[source_e]   (edges in ascending source order,
// the same order in every process and in the serial reference), then
// z <- min(max(z + bias_j if z != 0, 0), ymax). `lane_max` (stride floats)
// gets the largest output of every lane (0 for a sample that is now all
// zeros: it stays so). Row k's outputs go to z's row at[k] (row k when
// `at` is null: the row-parallel inference writes its rows of the layer in
// place).
void forward_block(const SparseLayer& layer, const float* y, float* z, Block b, float ymax, float* lane_max,
                   const uint32_t* at = nullptr);

}  // namespace gossipd::trainer::sparse
