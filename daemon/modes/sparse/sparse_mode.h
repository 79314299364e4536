#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/modes/sparse/net/fashion_inputs.h"
#include "daemon/modes/sparse/row_training.h"
#include "daemon/modes/sparse/sparse_traffic.h"
#include "daemon/worker/mode.h"

namespace gossipd::daemon {

// gossipd run's flags of --algo sparse.
struct SparseFlags {
  uint32_t neurons = 0;  // 0: not given (1024)
  uint32_t layers = 0;   // 0: not given (4)
  double imbalance = 1.05;
  std::string partition = "auto";  // auto (= hypergraph) | block | random | hypergraph | a partition file
};

// Every parameter of a share, one after another (its hash names the share).
std::vector<float> sparse_params(const RowModel& share);

// What one process of --algo sparse trains: its share of every layer's
// rows under the partition, and the sparse inputs of Fashion-MNIST.
struct SparseReplica : Replica {
  uint32_t neurons = 0, layers = 0, rank = 0, processes = 1;
  std::string partition;
  SparseTraffic planned;
  RowModel share;  // the worker puts the trained share back at its end
  trainer::sparse::SparseDataset train, test;
  uint64_t rounds = 0;  // steps done (the worker counts them)

  const protocol::SegmentTable& segments() const override { return no_segments_; }
  std::vector<float> params() const override { return sparse_params(share); }
  uint64_t round() const override { return rounds; }
  size_t train_samples() const override { return train.inputs.count(); }
  std::string config_summary() const override;

 private:
  protocol::SegmentTable no_segments_;
};

// --algo sparse (Demirci and Ferhatosmanoglu): one sparse network — a
// RadiX-Net of --neurons N x --layers L, ReLU layers on its edges and a
// dense softmax head of ten classes — trained on Fashion-MNIST made into the
// challenge's inputs (√N × √N, binarised), every layer's neurons spread
// over the members by --partition (rank r, members sorted by id, is process
// r). Each step is daemon/modes/sparse/row_training's: the whole cluster is one
// model replica, --batch its batch. Takes no joiners and writes no
// checkpoints (both refused at start); a member that dies stops the others
// within --timeout-ms plus --failure-timeout-ms, naming it.
std::unique_ptr<Mode> make_sparse_mode();

}  // namespace gossipd::daemon
