#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "daemon/modes/sparse/net/sparse_net.h"

namespace gossipd::trainer::sparse {

struct InferOptions {
  size_t block = 0;  // samples per block; 0: default_block(N)
  float ymax = kChallengeYmax;
  bool keep_activations = false;  // return the final layer's nonzeros
};

struct InferResult {
  std::vector<uint32_t> categories;  // 0-based samples whose final activations are not all zero, ascending
  SparseInputs activations;          // with keep_activations: the final nonzeros of each category, in order
  double seconds = 0;                // the inference alone (no file reading)
};

// The challenge's inference, serial: Y <- min(max(Y·W + b on the nonzeros
// of Y·W, 0), ymax) layer by layer, on blocks of samples held neuron-major;
// a sample whose activations all become zero leaves its block (it can never
// come back). Throws std::invalid_argument when the inputs' width is not
// the network's.
InferResult infer(const SparseNet& net, const SparseInputs& inputs, const InferOptions& o = {});

// The block size `infer` uses for N neurons when none is given: a layer's
// activations of `bytes`, 1 MiB (N = 1024: 256 samples, 4096: 64), in
// whole lane chunks, at most 256.
// Measured alternately on one core (RadiX-Net, L = 120, 6000 inputs): N =
// 4096 took 7.6-7.8 s with 64 against 9.6-9.8 with 16 (256 KiB) and 8.2-8.3
// with 32; N = 1024 1.73 s with 256, 1.70 with 128, 2.15-2.21 with 64 (a
// later pass: 1.91, 1.79, 2.34).
size_t default_block(uint32_t neurons, size_t bytes = size_t{1} << 20);

}  // namespace gossipd::trainer::sparse
