#include "daemon/modes/sparse/sparse_partition.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <stdexcept>

#include "daemon/modes/sparse/partition_file.h"
#include "daemon/modes/sparse/sparse_traffic.h"
#include "trainer/rng.h"

namespace gossipd::daemon {

namespace sp = trainer::sparse;

const std::vector<std::string>& partitioner_names() {
  static const std::vector<std::string> names{"block", "random", "hypergraph"};
  return names;
}

NeuronPartitioner parse_partitioner(const std::string& name) {
  if (name == "block") return NeuronPartitioner::kBlock;
  if (name == "random") return NeuronPartitioner::kRandom;
  if (name == "hypergraph") return NeuronPartitioner::kHypergraph;
  throw std::invalid_argument("unknown partitioner '" + name + "' (block, random, hypergraph)");
}

Hypergraph product_hypergraph(const sp::SparseLayer& l, const std::vector<uint32_t>* before) {
  const uint32_t n = l.neurons;
  Hypergraph h;
  h.vertex_weight.assign(2 * static_cast<size_t>(n), 0.0f);
  for (uint32_t j = 0; j < n; ++j)
    h.vertex_weight[n + j] = static_cast<float>(l.offsets[j + 1] - l.offsets[j]);
  if (before != nullptr) {
    h.fixed_part.assign(2 * static_cast<size_t>(n), -1);
    for (uint32_t i = 0; i < n; ++i) h.fixed_part[i] = static_cast<int32_t>((*before)[i]);
  }
  // The readers of each source: the layer's edges turned around.
  std::vector<uint32_t> start(n + 1, 0);
  for (uint32_t i : l.sources) ++start[i + 1];
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<uint32_t> readers(l.sources.size());
  std::vector<uint32_t> fill(start.begin(), start.end() - 1);
  for (uint32_t j = 0; j < n; ++j)
    for (uint32_t e = l.offsets[j]; e < l.offsets[j + 1]; ++e) readers[fill[l.sources[e]]++] = n + j;
  h.pins.reserve(n + readers.size());
  for (uint32_t i = 0; i < n; ++i) {
    h.pins.push_back(i);
    h.pins.insert(h.pins.end(), readers.begin() + start[i], readers.begin() + start[i + 1]);
    h.net_offsets.push_back(static_cast<uint32_t>(h.pins.size()));
  }
  return h;
}

namespace {

std::vector<uint32_t> block_owners(uint32_t neurons, uint32_t procs) {
  std::vector<uint32_t> owner(neurons);
  for (uint32_t j = 0; j < neurons; ++j)
    owner[j] = static_cast<uint32_t>(static_cast<uint64_t>(j) * procs / neurons);
  return owner;
}

// One product's partition by PHG from two starts, the lower cut kept:
// anew, and refining block's (which a network numbered in blocks favours).
std::vector<uint32_t> partition_product(Hypergraph h, uint32_t procs, const NeuronPartitionOptions& o,
                                        size_t l) {
  const HypergraphOptions ho{procs, o.imbalance, o.seed + l};
  std::vector<uint32_t> fresh = partition_hypergraph(h, ho);
  const std::vector<uint32_t> block = block_owners(static_cast<uint32_t>(h.vertices() / 2), procs);
  h.start_part.assign(block.begin(), block.end());
  h.start_part.insert(h.start_part.end(), block.begin(), block.end());
  for (size_t v = 0; v < h.fixed_part.size(); ++v)
    if (h.fixed_part[v] >= 0) h.start_part[v] = static_cast<uint32_t>(h.fixed_part[v]);
  std::vector<uint32_t> refined = partition_hypergraph(h, ho);
  return hypergraph_cut(h, refined) < hypergraph_cut(h, fresh) ? refined : fresh;
}

// Layer by layer, each with the layer before fixed (the first with the inputs free).
NeuronOwners layered_hypergraph(const sp::SparseNet& net, uint32_t procs, const NeuronPartitionOptions& o) {
  NeuronOwners owners(1);
  for (size_t l = 0; l < net.layers.size(); ++l) {
    const std::vector<uint32_t> part =
        partition_product(product_hypergraph(net.layers[l], l == 0 ? nullptr : &owners[l]), procs, o, l);
    if (l == 0) owners[0].assign(part.begin(), part.begin() + net.neurons);
    owners.emplace_back(part.begin() + net.neurons, part.end());
  }
  if (net.layers.empty()) owners[0] = std::vector<uint32_t>(net.neurons, 0);
  return owners;
}

// The layered partition, or block's where that moves fewer words in all
// (block is exactly balanced, so within any bound). Each layer's PHG runs
// with the layer before fixed, so once the chain leaves block's owners its
// later layers cannot come back to block's cut: on a RadiX-Net numbered in
// blocks at small P (N = 1024 and 4096, P = 2) the chain alone moved 15-18%
// more words than block.
NeuronOwners by_hypergraph(const sp::SparseNet& net, uint32_t procs, const NeuronPartitionOptions& o) {
  NeuronOwners layered = layered_hypergraph(net, procs, o);
  NeuronOwners block(net.layers.size() + 1, block_owners(net.neurons, procs));
  const bool block_moves_less =
      price_partition(net, block, procs).words < price_partition(net, layered, procs).words;
  return block_moves_less ? block : layered;
}

}  // namespace

NeuronOwners partition_neurons(const sp::SparseNet& net, uint32_t procs, NeuronPartitioner how,
                               const NeuronPartitionOptions& o) {
  if (procs == 0 || procs > 64 || procs > net.neurons) {
    throw std::invalid_argument(std::to_string(net.neurons) + " neurons cannot be split over " +
                                std::to_string(procs) + " processes (1 to 64, at most one per neuron)");
  }
  if (how == NeuronPartitioner::kHypergraph) return by_hypergraph(net, procs, o);
  std::vector<uint32_t> owner = block_owners(net.neurons, procs);
  if (how == NeuronPartitioner::kRandom) {
    std::vector<uint32_t> order(net.neurons);
    std::iota(order.begin(), order.end(), 0u);
    trainer::Rng rng = trainer::Rng::derive(o.seed, 0x5ba45e);
    for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[rng.below(k)]);
    for (uint32_t k = 0; k < net.neurons; ++k) owner[order[k]] = k % procs;
  }
  return NeuronOwners(net.layers.size() + 1, owner);
}

NeuronOwners partition_by_spec(const std::string& spec, const sp::SparseNet& net, uint32_t procs,
                               const NeuronPartitionOptions& o) {
  const auto& names = partitioner_names();
  if (std::find(names.begin(), names.end(), spec) != names.end())
    return partition_neurons(net, procs, parse_partitioner(spec), o);
  if (!std::filesystem::exists(spec)) {
    throw std::invalid_argument(
        "neither block, random, hypergraph nor a partition file (no such file): name "
        "a partitioner or a file gossipctl plan sparse --write-partitions wrote");
  }
  uint32_t made_for = 0;
  NeuronOwners owners = read_partition_file(spec, net, made_for);
  if (made_for != procs)
    throw std::invalid_argument("the file is for " + std::to_string(made_for) + " processes, not " +
                                std::to_string(procs) + ": partition for " + std::to_string(procs) +
                                " (gossipctl plan sparse --procs " + std::to_string(procs) + ")");
  return owners;
}

}  // namespace gossipd::daemon
