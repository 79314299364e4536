#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gossipd::daemon {

// A hypergraph: weighted vertices 0..n-1 and nets, each a set of vertices
// (its pins). Cutting a net over λ parts costs λ − 1.
struct Hypergraph {
  std::vector<float> vertex_weight;
  std::vector<uint32_t> net_offsets{0};  // net k's pins: pins[net_offsets[k] .. net_offsets[k + 1])
  std::vector<uint32_t> pins;
  std::vector<int32_t> fixed_part;   // empty, or per vertex: -1 free, else the part it must stay in
  std::vector<uint32_t> start_part;  // empty, or every vertex's part to refine from (REFINE, not PARTITION)

  size_t vertices() const { return vertex_weight.size(); }
  size_t nets() const { return net_offsets.size() - 1; }
};

struct HypergraphOptions {
  uint32_t parts = 2;
  double imbalance = 1.05;  // the heaviest part at most this times the mean
  uint64_t seed = 1;
};

// Σ (λ − 1) over the nets: the cut `part` makes (parts < 64).
uint64_t hypergraph_cut(const Hypergraph& h, const std::vector<uint32_t>& part);

// Zoltan's parallel hypergraph partitioner (PHG), run in this one process
// (MPI starts on first use and finishes at exit): the part of every vertex,
// fixed vertices where they were put. With `start_part` Zoltan refines that
// partition (moves that lower the cut) instead of partitioning anew.
// Throws DaemonError (daemon/config/cli.h) when Zoltan fails.
std::vector<uint32_t> partition_hypergraph(const Hypergraph& h, const HypergraphOptions& o);

}  // namespace gossipd::daemon
