#include "daemon/ctl/mean_curve.h"

#include <algorithm>
#include <map>

#include "daemon/ctl/compare_report.h"

namespace gossipd::daemon {

std::vector<CurvePoint> mean_curve(const std::vector<std::vector<proto::EpochRecord>>& workers) {
  std::map<double, std::vector<const proto::EpochRecord*>> by_progress;
  for (const auto& records : workers) {
    for (const auto& r : records) by_progress[r.progress()].push_back(&r);
  }
  std::vector<CurvePoint> curve;
  for (const auto& [progress, at] : by_progress) {
    if (at.size() != workers.size()) continue;
    const auto n = static_cast<double>(at.size());
    CurvePoint p;
    p.progress = progress;
    for (const proto::EpochRecord* r : at) {
      p.wall_seconds = std::max(p.wall_seconds, r->wall_seconds());
      p.train_seconds = std::max(p.train_seconds, r->train_seconds());
      p.round = std::max(p.round, r->round());
      p.test_accuracy += r->test_accuracy() / n;
      p.test_loss += r->test_loss() / n;
      p.consensus_distance += r->consensus_distance() / n;
      p.bytes_sent += static_cast<double>(r->bytes_sent()) / n;
    }
    curve.push_back(p);
  }
  return curve;
}

std::vector<CurvePoint> mean_curve(const std::vector<std::string>& metrics_files) {
  std::vector<std::vector<proto::EpochRecord>> workers;
  for (const auto& f : metrics_files) workers.push_back(read_epoch_records(f));
  return mean_curve(workers);
}

}  // namespace gossipd::daemon
