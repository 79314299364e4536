#include "daemon/modes/sparse/sparse_rows.h"

#include <stdexcept>
#include <string>

namespace gossipd::daemon {

namespace sp = trainer::sparse;

namespace {

void check_owners(const sp::SparseNet& net, const std::vector<std::vector<uint32_t>>& owners, uint32_t procs,
                  uint32_t me) {
  if (procs == 0 || me >= procs)
    throw std::invalid_argument("process " + std::to_string(me) + " of " + std::to_string(procs));
  if (owners.size() != net.layers.size() + 1) {
    throw std::invalid_argument("the partition has " + std::to_string(owners.size()) +
                                " layers of owners, the network needs " +
                                std::to_string(net.layers.size() + 1));
  }
  for (size_t l = 0; l < owners.size(); ++l) {
    if (owners[l].size() != net.neurons) {
      throw std::invalid_argument("the partition's layer " + std::to_string(l) + " has " +
                                  std::to_string(owners[l].size()) + " owners, the network " +
                                  std::to_string(net.neurons) + " neurons");
    }
    for (uint32_t p : owners[l])
      if (p >= procs)
        throw std::invalid_argument("the partition's layer " + std::to_string(l) + " names process " +
                                    std::to_string(p) + " of " + std::to_string(procs));
  }
}

std::vector<uint32_t> owned_by(const std::vector<uint32_t>& owner, uint32_t me) {
  std::vector<uint32_t> out;
  for (uint32_t j = 0; j < owner.size(); ++j)
    if (owner[j] == me) out.push_back(j);
  return out;
}

// Rows `neurons` of the layer, with their edges in the layer's (serial) order.
RowSet rows_of(const sp::SparseLayer& layer, std::vector<uint32_t> neurons) {
  RowSet s;
  sp::SparseLayer& r = s.rows;
  r.neurons = static_cast<uint32_t>(neurons.size());
  r.offsets.push_back(0);
  for (uint32_t j : neurons) {
    for (uint32_t e = layer.offsets[j]; e < layer.offsets[j + 1]; ++e) {
      r.sources.push_back(layer.sources[e]);
      r.weights.push_back(layer.weights[e]);
    }
    r.offsets.push_back(static_cast<uint32_t>(r.sources.size()));
    r.bias.push_back(layer.bias[j]);
  }
  s.neurons = std::move(neurons);
  return s;
}

// Whether every source of neuron j is owned by `me` in the layer before.
bool reads_only_own(const sp::SparseLayer& layer, const std::vector<uint32_t>& before, uint32_t j,
                    uint32_t me) {
  for (uint32_t e = layer.offsets[j]; e < layer.offsets[j + 1]; ++e)
    if (before[layer.sources[e]] != me) return false;
  return true;
}

// For every neuron of the layer before, the processes that read it in this
// layer, a bit each (procs <= 64).
std::vector<uint64_t> readers(const sp::SparseLayer& layer, const std::vector<uint32_t>& owner) {
  std::vector<uint64_t> r(owner.size(), 0);
  for (uint32_t j = 0; j < layer.neurons; ++j)
    for (uint32_t e = layer.offsets[j]; e < layer.offsets[j + 1]; ++e)
      r[layer.sources[e]] |= uint64_t{1} << owner[j];
  return r;
}

RowProduct product(const sp::SparseLayer& layer, const std::vector<uint32_t>& before,
                   const std::vector<uint32_t>& owner, uint32_t procs, uint32_t me) {
  RowProduct p;
  p.mine = owned_by(owner, me);
  std::vector<uint32_t> local, remote;
  for (uint32_t j : p.mine) (reads_only_own(layer, before, j, me) ? local : remote).push_back(j);
  p.local = rows_of(layer, std::move(local));
  p.remote = rows_of(layer, std::move(remote));
  p.send.resize(procs);
  p.recv.resize(procs);
  const std::vector<uint64_t> read = readers(layer, owner);
  for (uint32_t i = 0; i < before.size(); ++i) {
    const uint32_t q = before[i];
    if (q == me) {
      for (uint32_t t = 0; t < procs; ++t)
        if (t != me && (read[i] >> t & 1)) p.send[t].push_back(i);
    } else if (read[i] >> me & 1) {
      p.recv[q].push_back(i);
    }
  }
  return p;
}

}  // namespace

RowShare share_rows(const sp::SparseNet& net, const std::vector<std::vector<uint32_t>>& owners,
                    uint32_t procs, uint32_t me) {
  if (procs > 64) throw std::invalid_argument("at most 64 processes, not " + std::to_string(procs));
  check_owners(net, owners, procs, me);
  RowShare s;
  s.inputs = owned_by(owners[0], me);
  for (size_t l = 0; l < net.layers.size(); ++l)
    s.products.push_back(product(net.layers[l], owners[l], owners[l + 1], procs, me));
  return s;
}

}  // namespace gossipd::daemon
