#pragma once

#include <cstdint>

#include "daemon/modes/sparse/net/sparse_net.h"

namespace gossipd::trainer::sparse {

// The Graph Challenge's networks have 32 incoming edges per neuron, all of
// weight 1/16, and a bias fixed by the width.
constexpr uint32_t kRadixFanIn = 32;
constexpr float kRadixWeight = 1.0f / 16;

// The challenge's bias for N neurons: -0.30 (1024), -0.35 (4096), -0.40
// (16384), -0.45 (65536); a smaller network takes the smallest's, a width in
// between the next smaller one's.
float challenge_bias(uint32_t neurons);

// A RadiX-Net of radix 32 (Robinett and Kepner): neuron indices read as
// log2(N) bits; layer l (from 0) connects each neuron j to the 32 neurons
// that equal j outside a window of 5 bits starting at bit 5·l (mod log2 N,
// wrapping). Every neuron has 32 inputs and 32 outputs, and after
// ceil(log2(N) / 5) layers every input reaches every output. Throws
// std::invalid_argument unless N is a power of two from 32 to 2^24.
SparseNet make_radix_net(uint32_t neurons, uint32_t layers);

}  // namespace gossipd::trainer::sparse
