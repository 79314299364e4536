#include "daemon/training_loop.h"

#include <algorithm>
#include <cstdio>

#include "protocol/errors.h"

namespace gossipd::daemon {

TrainingLoop::TrainingLoop(std::string id, trainer::Trainer& trainer, const trainer::Dataset& test,
                             WorkerState& state, MetricsRegistry& metrics, JsonLinesWriter& log, int epochs,
                             bool quiet)
    : id_(std::move(id)),
      trainer_(trainer),
      test_(test),
      state_(state),
      log_(log),
      epochs_(epochs),
      quiet_(quiet),
      rounds_(metrics.counter("gossipd_rounds_total", "Training rounds (steps) completed")),
      epoch_gauge_(metrics.gauge("gossipd_epoch", "Epochs of local data completed")),
      loss_gauge_(metrics.gauge("gossipd_loss", "Mean training loss of the last epoch")),
      accuracy_gauge_(metrics.gauge("gossipd_test_accuracy", "Test accuracy after the last epoch")),
      start_(std::chrono::steady_clock::now()) {}

size_t TrainingLoop::steps_per_epoch(size_t dataset_size, size_t members, size_t batch) {
  const size_t per_member = dataset_size / std::max<size_t>(members, 1);
  return std::max<size_t>(1, per_member / std::max<size_t>(batch, 1));
}

void TrainingLoop::run(size_t steps, std::stop_token stop, const Step& step, const BeforeEval& before_eval) {
  start_ = std::chrono::steady_clock::now();
  state_.update([](proto::Status& s) { s.set_state("training"); });
  const size_t batch = trainer_.options().batch;
  for (int e = 0; e < epochs_; ++e) {
    const auto epoch_start = std::chrono::steady_clock::now();
    trainer_.sampler().start_epoch(static_cast<uint32_t>(e));
    double loss_sum = 0;
    size_t correct = 0, samples = 0;
    for (size_t s = 0; s < steps; ++s) {
      if (stop.stop_requested()) throw protocol::Aborted(id_, "training");
      trainer_.set_epoch_progress(e + static_cast<double>(s) / static_cast<double>(steps));
      const trainer::StepResult r = step(trainer_.sampler().next_batch(batch));
      loss_sum += r.loss * r.samples;
      correct += static_cast<size_t>(r.correct);
      samples += static_cast<size_t>(r.samples);
      step_done(trainer_.step_count(), loss_sum / static_cast<double>(samples));
    }
    trainer_.set_epoch_progress(e + 1.0);
    if (before_eval) before_eval();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    epoch_done(static_cast<uint32_t>(e + 1), loss_sum / static_cast<double>(samples),
               static_cast<double>(correct) / static_cast<double>(samples), samples, seconds);
  }
}

void TrainingLoop::step_done(uint64_t round, double running_loss) {
  rounds_.add();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  state_.update([&](proto::Status& st) {
    st.set_round(round);
    st.set_rounds_per_second(elapsed > 0 ? static_cast<double>(round) / elapsed : 0.0);
    if (st.epoch() == 0) st.set_loss(running_loss);
  });
}

void TrainingLoop::epoch_done(uint32_t epoch, double train_loss, double train_accuracy, size_t samples,
                               double seconds) {
  const trainer::EvalResult ev = trainer_.evaluate(test_);
  const std::string hash = param_hash(trainer_.model().params());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  state_.update([&](proto::Status& s) {
    s.set_epoch(epoch);
    s.set_loss(train_loss);
    s.set_test_accuracy(ev.accuracy);
    s.set_test_loss(ev.loss);
    s.set_param_hash(hash);
  });
  epoch_gauge_.set(epoch);
  loss_gauge_.set(train_loss);
  accuracy_gauge_.set(ev.accuracy);
  proto::EpochRecord rec;
  rec.set_epoch(epoch);
  rec.set_loss(train_loss);
  rec.set_train_accuracy(train_accuracy);
  rec.set_test_loss(ev.loss);
  rec.set_test_accuracy(ev.accuracy);
  rec.set_samples_per_second(seconds > 0 ? static_cast<double>(samples) / seconds : 0.0);
  rec.set_wall_seconds(wall);
  rec.set_learning_rate(trainer_.current_lr());
  rec.set_samples(static_cast<uint32_t>(samples));
  rec.set_consensus_distance(state_.snapshot().consensus_distance());
  log_.write(rec);
  if (!quiet_) {
    std::printf("[%s] epoch %u/%d  loss %.4f  train_acc %.4f  test_acc %.4f  round %llu  %.1f s\n", id_.c_str(),
                epoch, epochs_, train_loss, train_accuracy, ev.accuracy,
                static_cast<unsigned long long>(trainer_.step_count()), wall);
    std::fflush(stdout);
  }
}

}  // namespace gossipd::daemon
