#pragma once

#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/checkpoint.h"
#include "daemon/cluster/membership.h"
#include "daemon/config/run_options.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/worker_state.h"
#include "daemon/worker/training_loop.h"
#include "protocol/node.h"
#include "protocol/segment_table.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// One process's part in training, whatever the mode: it trains to the end of
// the schedule on what gossipd run built for it (WorkerContext).
class Worker {
 public:
  virtual ~Worker() = default;
  // Trains; throws protocol::Aborted when `stop` fires, and
  // protocol::TransportError for a fault it cannot ride out.
  virtual void run(std::stop_token stop) = 0;
};

// What gossipd run has built when it makes the worker: the node, the
// membership, the trainer and its loop, and what the run starts from (a
// join, a checkpoint, or round 0).
struct WorkerContext {
  const RunOptions& options;
  protocol::Node& node;
  std::vector<std::string> members;  // the initial members, sorted: index = rank
  Membership& membership;
  trainer::Trainer& trainer;
  TrainingLoop& loop;
  WorkerState& state;
  MetricsRegistry& metrics;
  protocol::SegmentTable segments;
  size_t steps_per_epoch = 1;                  // the same on every member
  uint64_t topology_seed = 1;                  // the same on every member (a joiner's comes from its contact)
  bool joined = false;                         // entered a running cluster: no start-up barrier
  bool resumed = false;                        // restarted from its checkpoint with the other initial members
  const ReplicaState* resume_state = nullptr;  // that checkpoint's state (resumed only)
  std::vector<double> push_sum_weights;        // SGP: the weights it starts from (joined or resumed)
  proto::StateHeader snapshot_header;          // the schedule and mode, filled into every state it serves
  Checkpointer* checkpointer = nullptr;        // nullptr: no checkpoints
};

}  // namespace gossipd::daemon
