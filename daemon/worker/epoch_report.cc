#include "daemon/worker/epoch_report.h"

namespace gossipd::daemon {

EpochReport::EpochReport(WorkerState& state, MetricsRegistry& metrics, JsonLinesWriter& log,
                         EvaluationSink sink)
    : state_(state),
      log_(log),
      sink_(std::move(sink)),
      rounds_(metrics.counter("gossipd_rounds_total", "Training rounds (steps) completed")),
      epoch_gauge_(metrics.gauge("gossipd_epoch", "Epochs of local data completed")),
      loss_gauge_(metrics.gauge("gossipd_loss", "Mean training loss of the last epoch")),
      accuracy_gauge_(metrics.gauge("gossipd_test_accuracy", "Test accuracy at the last evaluation")) {}

void EpochReport::publish(const proto::EpochRecord& rec, const std::string& hash) {
  const uint32_t epoch = rec.epoch();
  const bool epoch_end = rec.progress() == static_cast<double>(epoch);  // else an evaluation inside the epoch
  state_.update([&](proto::Status& s) {
    s.set_epoch(epoch);
    if (epoch_end) s.set_loss(rec.loss());
    s.set_test_accuracy(rec.test_accuracy());
    s.set_test_loss(rec.test_loss());
    s.set_param_hash(hash);
  });
  epoch_gauge_.set(epoch);
  if (epoch_end) loss_gauge_.set(rec.loss());
  accuracy_gauge_.set(rec.test_accuracy());
  log_.write(rec);
  if (sink_) sink_(rec);
}

}  // namespace gossipd::daemon
