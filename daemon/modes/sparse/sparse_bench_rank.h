#pragma once

#include <string>
#include <vector>

#include "daemon/bench/bench_workers.h"
#include "daemon/modes/sparse/net/sparse_net.h"
#include "daemon/modes/sparse/sparse_bench.h"
#include "protocol/transport/node.h"

namespace gossipd::daemon {

// The network and inputs every process of gossipctl bench sparse reads.
struct SparseProblem {
  trainer::sparse::SparseNet net;
  trainer::sparse::SparseInputs inputs;
};

// One process of the bench: its rows of every layer, `o.warmup + o.reps`
// repetitions of the inference (or, with o.train, of one training step of
// o.batch samples). In every repetition rank 0 first times the serial
// reference while the others wait in a barrier (idle: the reference has
// the machine to itself), then every rank times its row-parallel run: the
// two alternate, as noisy timings must. Exact when every run gives the
// reference's categories (the training: the first step's loss within 1e-5
// of the reference's; the trainers' own tests hold 100 steps) and the node
// counts the planner's bytes per product. Rank 0's report carries the
// reference's times.
WorkerReport run_sparse_rank(protocol::Node& node, size_t rank, const std::vector<std::string>& endpoints,
                             const SparseBenchOptions& o, const SparseProblem& p);

}  // namespace gossipd::daemon
