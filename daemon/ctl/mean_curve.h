#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// One evaluation every worker of a run recorded, summed up over the workers:
// the means of what they measured, and the slowest worker's clocks and rounds.
struct CurvePoint {
  double progress = 0;  // epochs of data trained
  double wall_seconds = 0;
  double train_seconds = 0;  // evaluations left out
  uint64_t round = 0;
  double test_accuracy = 0;
  double test_loss = 0;
  double consensus_distance = 0;
  double bytes_sent = 0;
};

// The run's curve from each worker's epoch records (--metrics-out), by
// progress: evaluations some worker lacks (collect may miss some) are left
// out; every worker computes the same progress for the same step.
std::vector<CurvePoint> mean_curve(const std::vector<std::vector<proto::EpochRecord>>& workers);

// The same from the workers' --metrics-out files.
std::vector<CurvePoint> mean_curve(const std::vector<std::string>& metrics_files);

}  // namespace gossipd::daemon
