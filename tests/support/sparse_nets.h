#pragma once

// Small sparse networks for the sparse tests: a random network, binary
// inputs, and the challenge's rule applied one sample at a time (what the
// serial and the distributed inference are checked against). Header-only:
// the tests that use it link the sparse trainer.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "daemon/modes/sparse/net/sparse_net.h"
#include "trainer/rng.h"

namespace gossipd::testing {

using trainer::Rng;
using trainer::sparse::Edge;
using trainer::sparse::kChallengeYmax;
using trainer::sparse::layer_from_edges;
using trainer::sparse::SparseInputs;
using trainer::sparse::SparseLayer;
using trainer::sparse::SparseNet;

// A random network (weights of both signs, so that Y·W can be zero where
// inputs are not) and binary inputs.
inline SparseNet random_net(uint32_t n, uint32_t layers, float bias, uint64_t seed) {
  Rng rng(seed);
  SparseNet net;
  net.neurons = n;
  for (uint32_t l = 0; l < layers; ++l) {
    std::vector<Edge> edges;
    for (uint32_t j = 0; j < n; ++j)
      for (uint32_t i = 0; i < n; ++i)
        if (rng.below(4) == 0)
          edges.push_back({i, j, static_cast<float>(static_cast<int>(rng.below(9)) - 3) / 8});
    net.layers.push_back(layer_from_edges(n, std::move(edges), bias, "random"));
  }
  return net;
}

inline SparseInputs random_inputs(uint32_t n, size_t count, uint64_t seed) {
  Rng rng(seed);
  SparseInputs in;
  in.neurons = n;
  for (size_t s = 0; s < count; ++s) {
    for (uint32_t i = 0; i < n; ++i) {
      if (rng.below(3) != 0) continue;
      in.index.push_back(i);
      in.value.push_back(1.0f);
    }
    in.offsets.push_back(static_cast<uint32_t>(in.index.size()));
  }
  return in;
}

// The challenge's rule, one sample at a time, edges in ascending source
// order: Z = Y·W; Z += b where Z != 0; Y = min(max(Z, 0), ymax).
inline std::vector<float> reference(const SparseNet& net, const SparseInputs& in, size_t s) {
  std::vector<float> y(net.neurons, 0.0f);
  for (uint32_t k = in.offsets[s]; k < in.offsets[s + 1]; ++k) y[in.index[k]] = in.value[k];
  for (const SparseLayer& l : net.layers) {
    std::vector<float> z(net.neurons, 0.0f);
    for (uint32_t j = 0; j < net.neurons; ++j) {
      float acc = 0;
      for (uint32_t e = l.offsets[j]; e < l.offsets[j + 1]; ++e) acc += l.weights[e] * y[l.sources[e]];
      if (acc != 0) acc += l.bias[j];
      z[j] = std::min(std::max(acc, 0.0f), kChallengeYmax);
    }
    y = std::move(z);
  }
  return y;
}

}  // namespace gossipd::testing
