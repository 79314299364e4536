#pragma once

#include <functional>
#include <string>

#include "daemon/observe/metrics.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/observe/worker_state.h"
#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// Who hears of every evaluation's record (gossipd run prints its progress
// line); nullptr: nobody.
using EvaluationSink = std::function<void(const proto::EpochRecord&)>;

// What every mode's loop does with an evaluation: /status, the gauges, the
// --metrics-out line and the sink, the same for every mode.
class EpochReport {
 public:
  EpochReport(WorkerState& state, MetricsRegistry& metrics, JsonLinesWriter& log, EvaluationSink sink);

  // `rec` holds its test figures; it ends an epoch when its progress is
  // the whole epoch (an evaluation inside an epoch leaves the loss alone).
  void publish(const proto::EpochRecord& rec, const std::string& param_hash);
  // gossipd_rounds_total: one more step done.
  void step_done() { rounds_.add(); }

 private:
  WorkerState& state_;
  JsonLinesWriter& log_;
  EvaluationSink sink_;
  Counter& rounds_;
  Gauge& epoch_gauge_;
  Gauge& loss_gauge_;
  Gauge& accuracy_gauge_;
};

}  // namespace gossipd::daemon
