#include "daemon/worker/replica.h"

#include <cstdio>

namespace gossipd::daemon {

TrainedReplica::TrainedReplica(trainer::Dataset train, trainer::Dataset test,
                               std::unique_ptr<trainer::Model> model, const trainer::TrainerOptions& options,
                               protocol::SegmentTable segments)
    : train_(std::move(train)),
      test_(std::move(test)),
      segments_(std::move(segments)),
      trainer_(std::make_unique<trainer::Trainer>(std::move(model), train_, options)) {}

std::vector<float> TrainedReplica::params() const {
  const auto p = trainer_->model().params();
  return {p.begin(), p.end()};
}

void TrainedReplica::flip_labels() {
  for (uint8_t& y : train_.labels) y = static_cast<uint8_t>(train_.classes - 1 - y);
}

std::string TrainedReplica::config_summary() const {
  char line[160];
  std::snprintf(line, sizeof(line), "%zu parameters in %zu segments, %zu training samples",
                trainer_->model().params().size(), segments_.size(), train_.size());
  return line;
}

}  // namespace gossipd::daemon
