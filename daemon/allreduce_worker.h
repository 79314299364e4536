#pragma once

#include <chrono>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/training_loop.h"
#include "protocol/node.h"

namespace gossipd::daemon {

struct AllreduceWorkerOptions {
  size_t train_size = 0;                             // samples in the whole training set (all members)
  std::chrono::milliseconds timeout{10000};          // a silent peer fails the step
  std::chrono::milliseconds startup_timeout{60000};  // waiting for every member at start
};

// AllReduce-SGD: every step, each member computes gradients on its own shard,
// the ring allreduce sums them, and every member applies the same average, so
// replicas stay bit-identical. Synchronous by nature: a dead member fails the
// step with PeerTimeout naming it (the caller reports it; re-forming the ring
// on a view change comes with dynamic membership).
class AllreduceWorker {
 public:
  AllreduceWorker(protocol::Node& node, std::vector<std::string> members, trainer::Trainer& trainer,
                  TrainingLoop& loop, AllreduceWorkerOptions options);

  // Trains; throws PeerTimeout, or Aborted when `stop` fires.
  void run(std::stop_token stop);

 private:
  protocol::Node& node_;
  std::vector<std::string> members_;
  trainer::Trainer& trainer_;
  TrainingLoop& loop_;
  AllreduceWorkerOptions options_;
};

}  // namespace gossipd::daemon
