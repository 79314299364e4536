#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gossipd::trainer::sparse {

// The Sparse DNN Graph Challenge's activation cap: Y <- min(ReLU(...), 32).
constexpr float kChallengeYmax = 32.0f;

// One edge of a layer: neuron `from` of the previous layer feeds neuron `to`
// of this one with `weight` (the challenge's W(from, to), Y <- Y·W).
struct Edge {
  uint32_t from = 0;
  uint32_t to = 0;
  float weight = 0;
};

// One layer of N neurons fed by the previous layer's N: every neuron's
// incoming edges, ascending by source (CSR by receiving neuron, the rows of
// W transposed). A neuron is what a process of the sparse mode owns.
struct SparseLayer {
  uint32_t neurons = 0;
  std::vector<uint32_t> offsets;  // neurons + 1; neuron j's edges are [offsets[j], offsets[j + 1])
  std::vector<uint32_t> sources;  // the previous layer's neuron of each edge
  std::vector<float> weights;
  std::vector<float> bias;  // per neuron, added where Y·W is nonzero

  size_t edges() const { return sources.size(); }
};

// Builds a layer from edges in any order, every neuron's bias `bias`.
// Throws DataError "`context`: ..." for a neuron index out of range or an
// edge given twice.
SparseLayer layer_from_edges(uint32_t neurons, std::vector<Edge> edges, float bias,
                             const std::string& context);

struct SparseNet {
  uint32_t neurons = 0;
  std::vector<SparseLayer> layers;

  size_t edges() const;
};

// The same network with each layer's neurons renumbered by a seeded
// permutation (the inputs keep their numbers): the same categories, its
// structure hidden from a partitioner that reads neuron numbers.
SparseNet shuffle_neurons(const SparseNet& net, uint64_t seed);

// A batch of inputs (the challenge's images): each sample's nonzero
// neurons, ascending, and their values (CSR by sample).
struct SparseInputs {
  uint32_t neurons = 0;
  std::vector<uint32_t> offsets{0};  // count() + 1
  std::vector<uint32_t> index;
  std::vector<float> value;

  size_t count() const { return offsets.size() - 1; }
  size_t nonzeros() const { return index.size(); }
  // The first `n` samples (all if n >= count()).
  SparseInputs head(size_t n) const;
};

}  // namespace gossipd::trainer::sparse
