#pragma once

#include <cstdint>
#include <vector>

#include "daemon/modes/sparse/net/sparse_net.h"
#include "daemon/modes/sparse/sparse_partition.h"

namespace gossipd::daemon {

// What a neuron partition moves and how evenly it loads, per product
// (one layer's Y·W): every process receives, from their owners, the
// entries of the layer before that its neurons read and it does not own.
// Per sample, so a batch of B samples moves B times the words.
struct SparseTraffic {
  uint64_t words = 0;                       // summed over the layers' products
  double words_per_product = 0;             // the mean over the layers
  double most_sent_per_product = 0;         // the mean over the layers of the most one process sends
  double imbalance = 0;                     // the worst layer's heaviest process's edges over the mean
  std::vector<std::vector<uint64_t>> sent;  // [layer][process]: words it sends in that product
};

SparseTraffic price_partition(const trainer::sparse::SparseNet& net, const NeuronOwners& owners,
                              uint32_t procs);

}  // namespace gossipd::daemon
