#include "daemon/ctl/mean_curve.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "daemon/ctl/compare_report.h"

namespace gossipd::daemon {
namespace {

// What one worker had trained at training time t.
struct Trained {
  double progress = 0, round = 0, bytes = 0;
};

Trained trained_at(const std::vector<proto::EpochRecord>& records, double t) {
  Trained before;
  double t0 = 0;
  for (const auto& r : records) {
    const Trained at{r.progress(), static_cast<double>(r.round()), static_cast<double>(r.bytes_sent())};
    if (r.train_seconds() >= t) {
      const double span = r.train_seconds() - t0;
      const double f = span > 0 ? (t - t0) / span : 1.0;
      return {before.progress + f * (at.progress - before.progress),
              before.round + f * (at.round - before.round), before.bytes + f * (at.bytes - before.bytes)};
    }
    before = at;
    t0 = r.train_seconds();
  }
  return before;
}

std::vector<std::vector<proto::EpochRecord>> workers_records(const std::vector<std::string>& metrics_files) {
  std::vector<std::vector<proto::EpochRecord>> workers;
  for (const auto& f : metrics_files) workers.push_back(read_epoch_records(f));
  return workers;
}

}  // namespace

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
  return mean_curve(workers_records(metrics_files));
}

std::vector<CurvePoint> model_curve(const std::vector<std::vector<proto::EpochRecord>>& workers) {
  std::vector<const proto::EpochRecord*> evaluations;
  size_t recording = 0;
  for (const auto& records : workers) {
    recording += records.empty() ? 0 : 1;
    for (const auto& r : records) evaluations.push_back(&r);
  }
  std::stable_sort(evaluations.begin(), evaluations.end(),
                   [](const auto* a, const auto* b) { return a->train_seconds() < b->train_seconds(); });
  std::vector<CurvePoint> curve;
  const auto n = static_cast<double>(recording);
  for (const proto::EpochRecord* e : evaluations) {
    CurvePoint p;
    p.wall_seconds = std::max(e->wall_seconds(), curve.empty() ? 0.0 : curve.back().wall_seconds);
    p.train_seconds = e->train_seconds();
    p.test_accuracy = e->test_accuracy();
    p.test_loss = e->test_loss();
    p.consensus_distance = e->consensus_distance();
    double round = 0;
    for (const auto& records : workers) {
      if (records.empty()) continue;
      const Trained t = trained_at(records, p.train_seconds);
      p.progress += t.progress / n;
      round += t.round / n;
      p.bytes_sent += t.bytes / n;
    }
    p.round = static_cast<uint64_t>(std::llround(round));
    curve.push_back(p);
  }
  return curve;
}

std::vector<CurvePoint> model_curve(const std::vector<std::string>& metrics_files) {
  return model_curve(workers_records(metrics_files));
}

std::vector<CurvePoint> run_curve(const std::vector<std::string>& metrics_files, bool one_model) {
  return one_model ? model_curve(metrics_files) : mean_curve(metrics_files);
}

}  // namespace gossipd::daemon
