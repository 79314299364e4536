#pragma once

#include <chrono>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/metrics.h"
#include "daemon/metrics_log.h"
#include "daemon/worker_state.h"
#include "protocol/node.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

struct AllreduceWorkerOptions {
  int epochs = 1;
  size_t train_size = 0;  // samples in the whole training set (all members)
  std::chrono::milliseconds timeout{10000};          // a silent peer fails the step
  std::chrono::milliseconds startup_timeout{60000};  // waiting for every member at start
  bool quiet = false;
};

// AllReduce-SGD: every step, each member computes gradients on its own shard,
// the ring allreduce sums them, and every member applies the same average, so
// replicas stay bit-identical. Synchronous by nature: a dead member fails the
// step with PeerTimeout naming it (the caller reports it; re-forming the ring
// on a view change comes with dynamic membership).
class AllreduceWorker {
 public:
  AllreduceWorker(protocol::Node& node, std::vector<std::string> members, trainer::Trainer& trainer,
                  const trainer::Dataset& test, WorkerState& state, MetricsRegistry& metrics,
                  JsonLinesWriter& log, AllreduceWorkerOptions options);

  // Trains for options.epochs; throws PeerTimeout, or Aborted when `stop` fires.
  void run(std::stop_token stop);

  // Steps per epoch: the same on every member (from the dataset size and
  // member count alone), so no member waits for a step others never make.
  static size_t steps_per_epoch(size_t dataset_size, size_t members, size_t batch);

 private:
  void finish_epoch(uint32_t epoch, double loss, double accuracy, size_t samples, double seconds);

  protocol::Node& node_;
  std::vector<std::string> members_;
  trainer::Trainer& trainer_;
  const trainer::Dataset& test_;
  WorkerState& state_;
  JsonLinesWriter& log_;
  AllreduceWorkerOptions options_;
  Counter& rounds_;
  Gauge& epoch_gauge_;
  Gauge& loss_gauge_;
  Gauge& accuracy_gauge_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace gossipd::daemon
