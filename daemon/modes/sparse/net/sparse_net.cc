#include "daemon/modes/sparse/net/sparse_net.h"

#include <algorithm>
#include <numeric>

#include "trainer/errors.h"
#include "trainer/rng.h"

namespace gossipd::trainer::sparse {

SparseLayer layer_from_edges(uint32_t neurons, std::vector<Edge> edges, float bias,
                             const std::string& context) {
  for (const Edge& e : edges) {
    if (e.from >= neurons || e.to >= neurons) {
      throw DataError(context + ": edge " + std::to_string(e.from + 1) + " -> " + std::to_string(e.to + 1) +
                      " names a neuron outside 1.." + std::to_string(neurons));
    }
  }
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return a.to != b.to ? a.to < b.to : a.from < b.from; });
  SparseLayer l;
  l.neurons = neurons;
  l.offsets.assign(neurons + 1, 0);
  l.sources.reserve(edges.size());
  l.weights.reserve(edges.size());
  for (size_t k = 0; k < edges.size(); ++k) {
    if (k > 0 && edges[k].to == edges[k - 1].to && edges[k].from == edges[k - 1].from) {
      throw DataError(context + ": edge " + std::to_string(edges[k].from + 1) + " -> " +
                      std::to_string(edges[k].to + 1) + " is given twice");
    }
    ++l.offsets[edges[k].to + 1];
    l.sources.push_back(edges[k].from);
    l.weights.push_back(edges[k].weight);
  }
  for (uint32_t j = 0; j < neurons; ++j) l.offsets[j + 1] += l.offsets[j];
  l.bias.assign(neurons, bias);
  return l;
}

size_t SparseNet::edges() const {
  size_t n = 0;
  for (const SparseLayer& l : layers) n += l.edges();
  return n;
}

SparseNet shuffle_neurons(const SparseNet& net, uint64_t seed) {
  std::vector<uint32_t> before(net.neurons);  // the layer before's renumbering
  std::iota(before.begin(), before.end(), 0u);
  SparseNet out;
  out.neurons = net.neurons;
  for (size_t l = 0; l < net.layers.size(); ++l) {
    std::vector<uint32_t> now(net.neurons);
    std::iota(now.begin(), now.end(), 0u);
    Rng rng = Rng::derive(seed, l);
    for (size_t k = now.size(); k > 1; --k) std::swap(now[k - 1], now[rng.below(k)]);
    const SparseLayer& in = net.layers[l];
    std::vector<Edge> edges;
    edges.reserve(in.edges());
    for (uint32_t j = 0; j < net.neurons; ++j)
      for (uint32_t e = in.offsets[j]; e < in.offsets[j + 1]; ++e)
        edges.push_back({before[in.sources[e]], now[j], in.weights[e]});
    SparseLayer layer = layer_from_edges(net.neurons, std::move(edges), 0.0f, "shuffle");
    for (uint32_t j = 0; j < net.neurons; ++j) layer.bias[now[j]] = in.bias[j];
    out.layers.push_back(std::move(layer));
    before = std::move(now);
  }
  return out;
}

SparseInputs SparseInputs::head(size_t n) const {
  if (n >= count()) return *this;
  SparseInputs h;
  h.neurons = neurons;
  h.offsets.assign(offsets.begin(), offsets.begin() + static_cast<std::ptrdiff_t>(n) + 1);
  h.index.assign(index.begin(), index.begin() + h.offsets.back());
  h.value.assign(value.begin(), value.begin() + h.offsets.back());
  return h;
}

}  // namespace gossipd::trainer::sparse
