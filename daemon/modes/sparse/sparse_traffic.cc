#include "daemon/modes/sparse/sparse_traffic.h"

#include <algorithm>
#include <bit>

namespace gossipd::daemon {

namespace sp = trainer::sparse;

SparseTraffic price_partition(const sp::SparseNet& net, const NeuronOwners& owners, uint32_t procs) {
  SparseTraffic t;
  double most = 0;
  for (size_t k = 0; k < net.layers.size(); ++k) {
    const sp::SparseLayer& l = net.layers[k];
    const std::vector<uint32_t>& from = owners[k];
    const std::vector<uint32_t>& owner = owners[k + 1];
    // The processes that read each source, as a bit per process (procs <= 64).
    std::vector<uint64_t> readers(net.neurons, 0);
    std::vector<uint64_t> edges(procs, 0);
    for (uint32_t j = 0; j < net.neurons; ++j) {
      edges[owner[j]] += l.offsets[j + 1] - l.offsets[j];
      for (uint32_t e = l.offsets[j]; e < l.offsets[j + 1]; ++e)
        readers[l.sources[e]] |= uint64_t{1} << owner[j];
    }
    std::vector<uint64_t> sent(procs, 0);
    for (uint32_t i = 0; i < net.neurons; ++i)
      sent[from[i]] += static_cast<uint64_t>(std::popcount(readers[i] & ~(uint64_t{1} << from[i])));
    for (uint64_t s : sent) t.words += s;
    most += static_cast<double>(*std::max_element(sent.begin(), sent.end()));
    const double mean = static_cast<double>(l.edges()) / procs;
    if (mean > 0)
      t.imbalance =
          std::max(t.imbalance, static_cast<double>(*std::max_element(edges.begin(), edges.end())) / mean);
    t.sent.push_back(std::move(sent));
  }
  if (!net.layers.empty()) {
    t.words_per_product = static_cast<double>(t.words) / static_cast<double>(net.layers.size());
    t.most_sent_per_product = most / static_cast<double>(net.layers.size());
  }
  return t;
}

}  // namespace gossipd::daemon
