#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/modes/sparse/net/sparse_net.h"
#include "daemon/modes/sparse/zoltan_hypergraph.h"

namespace gossipd::daemon {

// Who owns each neuron of every layer: owners[l][j] for l = 0 (the inputs)
// .. L. A process computes the neurons it owns in layer l, after receiving
// from their owners the entries of layer l − 1 they read.
using NeuronOwners = std::vector<std::vector<uint32_t>>;

enum class NeuronPartitioner { kBlock, kRandom, kHypergraph };

const std::vector<std::string>& partitioner_names();           // block, random, hypergraph
NeuronPartitioner parse_partitioner(const std::string& name);  // throws std::invalid_argument

struct NeuronPartitionOptions {
  double imbalance = 1.05;  // hypergraph: the heaviest process at most this times the mean, per layer
  uint64_t seed = 1;        // random and hypergraph
};

// The column-net model of one product Y_l = Y_(l-1)·W_l (Demirci and
// Ferhatosmanoglu): vertices 0..N-1 the neurons of layer l − 1, N..2N-1
// those of layer l weighted by their incoming edges; a net per neuron i of
// layer l − 1 holding i and every neuron that reads it, so that a
// partition's cut, Σ (λ − 1), is the words the product moves. With
// `before`, layer l − 1's vertices are fixed to those owners.
Hypergraph product_hypergraph(const trainer::sparse::SparseLayer& layer, const std::vector<uint32_t>* before);

// block: contiguous ranges as even as whole neurons allow, random: a seeded
// shuffle dealt out round robin, each the same in every layer; hypergraph:
// layer by layer with Zoltan's PHG, each layer's neurons partitioned with
// the layer before fixed (the first with the inputs free), every layer
// balanced on its own; PHG runs from two starts per layer, anew and
// refining block's, and the lower cut is kept; block's whole partition
// where that moves fewer words in all. Throws std::invalid_argument when
// procs is 0, above 64 or above the neurons.
NeuronOwners partition_neurons(const trainer::sparse::SparseNet& net, uint32_t procs, NeuronPartitioner how,
                               const NeuronPartitionOptions& o);

// The partition `spec` names: block, random or hypergraph (made here), or a
// partition file (gossipctl plan sparse --write-partitions) for this
// network and P. Throws std::invalid_argument for a file made for another
// P, DataError for a bad file or one for another network.
NeuronOwners partition_by_spec(const std::string& spec, const trainer::sparse::SparseNet& net, uint32_t procs,
                               const NeuronPartitionOptions& o);

}  // namespace gossipd::daemon
