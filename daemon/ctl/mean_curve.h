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

// The curve of the one model a run's members read (Mode::members_read_one_model:
// compute groups): every evaluation of every worker is a point, in order of
// training time, with that evaluation's accuracy, loss and training time (its
// wall time too, or the point before's where that is later), and
// what the members had trained by then (progress and bytes their means,
// round their mean too: each worker's linear between its records, from 0 at
// time 0, its last after its last). A fast group's evaluation is a point
// when it ran; the slow group's evaluations come later, as points of their own.
std::vector<CurvePoint> model_curve(const std::vector<std::vector<proto::EpochRecord>>& workers);
std::vector<CurvePoint> model_curve(const std::vector<std::string>& metrics_files);

// model_curve where `one_model` (the entry's members read one model), else mean_curve.
std::vector<CurvePoint> run_curve(const std::vector<std::string>& metrics_files, bool one_model);

}  // namespace gossipd::daemon
