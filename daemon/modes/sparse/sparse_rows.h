#pragma once

#include <cstdint>
#include <vector>

#include "daemon/modes/sparse/net/sparse_net.h"

namespace gossipd::daemon {

// The sparse mode's tags, as indices in its range (Mode::tags): the
// inference's rows and maxima, the training's rows and logits, the workers'
// start barrier, gossipctl bench sparse's own.
enum SparseTag : uint32_t {
  kInferRowsTag,
  kInferMaximaTag,
  kTrainRowsTag,
  kTrainLogitsTag,
  kWorkerStartTag,
  kBenchTag,
  kSparseTagCount
};

// What one process of the sparse mode does in one product Y_l = Y_(l-1)·W_l
// (row-parallel, Demirci and Ferhatosmanoglu): it computes the neurons of
// layer l it owns, after sending to every other process the entries of
// layer l − 1 it owns and that process reads, and receiving those it reads
// and does not own. Every list is ascending, so sender and receiver agree on
// the order of a message's rows without saying it.
// Some of a process's neurons of layer l (local index -> neuron, ascending)
// and their incoming edges, sources kept as layer l − 1's neuron numbers
// and in the serial order, so that each output is the serial reference's
// bit for bit.
struct RowSet {
  std::vector<uint32_t> neurons;
  trainer::sparse::SparseLayer rows;
};
struct RowProduct {
  std::vector<uint32_t> mine;  // this process's neurons of layer l, ascending
  // `mine` split: `local` reads only entries this process owns (computed
  // while the others' are on their way), `remote` reads some it receives.
  RowSet local, remote;
  std::vector<std::vector<uint32_t>> send;  // [p]: neurons of layer l − 1 it sends p (none to itself)
  std::vector<std::vector<uint32_t>> recv;  // [q]: neurons of layer l − 1 it receives from q
};

// This process's share of the network: its input neurons (owners[0]) and
// a RowProduct per layer. `owners[l][j]` is the owner of neuron j of layer
// l (l = 0: the inputs), as partition_neurons or a partition file gives
// them. Throws std::invalid_argument when the owners do not fit the network
// (a layer count or width that differs, an owner >= procs, me >= procs).
struct RowShare {
  std::vector<uint32_t> inputs;
  std::vector<RowProduct> products;
};
RowShare share_rows(const trainer::sparse::SparseNet& net, const std::vector<std::vector<uint32_t>>& owners,
                    uint32_t procs, uint32_t me);

}  // namespace gossipd::daemon
