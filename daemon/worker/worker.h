#pragma once

#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/checkpoint.h"
#include "daemon/cluster/membership.h"
#include "daemon/config/run_options.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/observe/worker_state.h"
#include "daemon/worker/epoch_report.h"
#include "daemon/worker/replica.h"
#include "daemon/worker/training_loop.h"
#include "protocol/collectives/segment_table.h"
#include "protocol/transport/node.h"
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

// What the run scaffold has built when it makes the worker: the node, the
// membership, what this process trains (for a trained replica, its trainer
// and the loop over it), and what the run starts from (a join, a
// checkpoint, or round 0). It lives only while the mode makes its worker:
// a worker copies what it keeps (the references in it outlive the worker).
struct WorkerContext {
  const RunOptions& options;
  protocol::Node& node;
  std::vector<std::string> members;  // the initial members, sorted: index = rank
  Membership& membership;
  Replica& replica;
  TrainingLoop* training_loop = nullptr;  // a trained replica's (nullptr otherwise)
  WorkerState& state;
  MetricsRegistry& metrics;
  JsonLinesWriter& log;          // --metrics-out
  EvaluationSink on_evaluation;  // who hears of every evaluation (TrainingLoop's too)
  protocol::SegmentTable segments;
  size_t steps_per_epoch = 1;                  // the same on every member
  uint64_t topology_seed = 1;                  // the same on every member (a joiner's comes from its contact)
  bool joined = false;                         // entered a running cluster: no start-up barrier
  bool resumed = false;                        // restarted from its checkpoint with the other initial members
  const ReplicaState* resume_state = nullptr;  // that checkpoint's state (resumed only)
  // The state header it starts from: a join's download or the checkpoint it
  // resumed (nullptr: round 0); a mode reads its own fields there (SGP's weights).
  const proto::StateHeader* entered_from = nullptr;
  proto::StateHeader snapshot_header;    // the schedule and mode, filled into every state it serves
  Checkpointer* checkpointer = nullptr;  // nullptr: no checkpoints

  // The trained replica's trainer and loop (a mode of trained replicas only).
  trainer::Trainer& trainer() const { return replica.trained()->trainer(); }
  TrainingLoop& loop() const { return *training_loop; }
};

}  // namespace gossipd::daemon
