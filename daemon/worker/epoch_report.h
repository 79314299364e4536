#pragma once

#include <string>

#include "daemon/observe/metrics.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/observe/worker_state.h"
#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// What every mode's loop does with an evaluation: /status, the gauges, the
// --metrics-out line and the progress line, the same for every mode.
class EpochReport {
 public:
  EpochReport(std::string id, WorkerState& state, MetricsRegistry& metrics, JsonLinesWriter& log, int epochs,
              bool quiet);

  // `rec` holds its test figures; it ends an epoch when its progress is
  // the whole epoch (an evaluation inside an epoch leaves the loss alone).
  void publish(const proto::EpochRecord& rec, const std::string& param_hash);
  // gossipd_rounds_total: one more step done.
  void step_done() { rounds_.add(); }

 private:
  std::string id_;
  WorkerState& state_;
  JsonLinesWriter& log_;
  int epochs_;
  bool quiet_;
  Counter& rounds_;
  Gauge& epoch_gauge_;
  Gauge& loss_gauge_;
  Gauge& accuracy_gauge_;
};

}  // namespace gossipd::daemon
