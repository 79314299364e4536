#include "daemon/worker/training_loop.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "protocol/wire/errors.h"

namespace gossipd::daemon {

TrainingLoop::TrainingLoop(std::string id, trainer::Trainer& trainer, const trainer::Dataset& test,
                           WorkerState& state, MetricsRegistry& metrics, JsonLinesWriter& log, int epochs,
                           EvaluationSink on_evaluation, int evals_per_epoch,
                           std::unique_ptr<trainer::Model> eval_model)
    : id_(std::move(id)),
      trainer_(trainer),
      test_(test),
      state_(state),
      report_(state, metrics, log, std::move(on_evaluation)),
      epochs_(epochs),
      evals_per_epoch_(std::max(1, evals_per_epoch)),
      comm_total_(metrics.counter("gossipd_comm_seconds_total",
                                  "Seconds the training thread waited on the protocol's exchange")),
      start_(std::chrono::steady_clock::now()) {
  if (eval_model) {
    background_ =
        std::make_unique<BackgroundEvaluator>(std::move(eval_model), trainer, test_, 0, true, kEvalMaxWait);
  }
}

TrainingLoop::SpanTimer::~SpanTimer() {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (span_ == Span::kComm) {
    loop_.comm_seconds_ += s;
    loop_.comm_total_.add(s);
  } else {
    loop_.observed_seconds_ += s;
    loop_.eval_seconds_ += s;
  }
}

double TrainingLoop::comm_ms_per_round(uint64_t round) const {
  return round > start_round_ ? 1000.0 * comm_seconds_ / static_cast<double>(round - start_round_) : 0.0;
}

void TrainingLoop::run(size_t steps, std::stop_token stop, const Step& step, const BeforeEval& before_eval) {
  start_ = std::chrono::steady_clock::now();
  start_round_ = trainer_.step_count();
  comm_seconds_ = 0;
  observed_seconds_ = 0;
  compute_seconds_ = 0;
  eval_seconds_ = 0;
  state_.update([&](proto::Status& s) {
    s.set_state("training");
    s.set_round(start_round_);  // a joiner or a resumed member starts past 0
    s.set_epochs_total(static_cast<uint32_t>(epochs_));
  });
  const size_t batch = trainer_.options().batch;
  const uint64_t total = static_cast<uint64_t>(epochs_) * steps;
  // The position is the trainer's count of completed steps, so a worker that
  // re-synchronises with its peers (and adopts their count, which may be a
  // step behind its own) continues from the agreed step.
  int epoch = -1;
  auto epoch_start = std::chrono::steady_clock::now();
  double loss_sum = 0;
  size_t correct = 0, samples = 0;
  // After `done` of the epoch's steps (all of them: the epoch's end).
  auto evaluate = [&](size_t done) {
    const bool end = done == steps;
    if (end) trainer_.set_epoch_progress(epoch + 1.0);
    if (before_eval) before_eval();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    const double n = static_cast<double>(std::max<size_t>(samples, 1));
    evaluated(static_cast<uint32_t>(end ? epoch + 1 : epoch),
              epoch + static_cast<double>(done) / static_cast<double>(steps), loss_sum / n,
              static_cast<double>(correct) / n, samples, seconds);
  };
  // Evaluations inside an epoch: after steps * j / evals_per_epoch of its
  // steps, j = 1 .. evals_per_epoch - 1 (fewer when an epoch has fewer steps).
  auto evaluates_inside = [&](size_t done) {
    for (int j = 1; j < evals_per_epoch_; ++j) {
      if (done == steps * static_cast<size_t>(j) / static_cast<size_t>(evals_per_epoch_)) return done > 0;
    }
    return false;
  };
  for (uint64_t g = trainer_.step_count(); g < total; g = trainer_.step_count()) {
    const int e = static_cast<int>(g / steps);
    if (e != epoch) {
      const bool first = epoch < 0;
      if (!first) evaluate(steps);
      epoch = e;
      epoch_start = std::chrono::steady_clock::now();
      loss_sum = 0;
      correct = samples = 0;
      trainer_.sampler().start_epoch(static_cast<uint32_t>(e));
      // A run resumed inside an epoch takes its batches up where an
      // uninterrupted run would be, not from the epoch's first.
      for (uint64_t k = 0; first && k < g % steps; ++k) trainer_.sampler().next_batch(batch);
    }
    if (stop.stop_requested()) throw StoppedBetweenSteps(id_, "training");
    trainer_.set_epoch_progress(e + static_cast<double>(g % steps) / static_cast<double>(steps));
    const auto delayed = std::chrono::steady_clock::now();
    if (step_delay_.count() > 0) injected_wait(step_delay_, stop);
    const auto began = std::chrono::steady_clock::now();
    const double other_before = not_compute();
    const trainer::StepResult r = step(trainer_.sampler().next_batch(batch));
    if (step_slowdown_ > 1 || emulated_step_.count() > 0) pad_compute(began, other_before, stop);
    compute_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - delayed).count() -
                        (not_compute() - other_before);
    loss_sum += r.loss * r.samples;
    correct += static_cast<size_t>(r.correct);
    samples += static_cast<size_t>(r.samples);
    step_done(trainer_.step_count(), loss_sum / static_cast<double>(std::max<size_t>(samples, 1)));
    const uint64_t now = trainer_.step_count();
    if (now > g && now / steps == static_cast<uint64_t>(e) && evaluates_inside(now % steps))
      evaluate(now % steps);
  }
  if (epoch >= 0) evaluate(steps);
  if (background_) eval_seconds_ += background_->finish();
}

void TrainingLoop::pad_compute(std::chrono::steady_clock::time_point began, double other_before,
                               std::stop_token stop) {
  const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  const double compute_s = std::max(0.0, step_s - (not_compute() - other_before));
  const double emulated_s = std::chrono::duration<double>(emulated_step_).count();
  const double wait_s = step_slowdown_ * std::max(compute_s, emulated_s) - compute_s;
  if (wait_s <= 0) return;
  injected_wait(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::duration<double>(wait_s)),
                stop);
}

void TrainingLoop::injected_wait(std::chrono::microseconds d, std::stop_token stop) {
  // The injected slowness ends early when training stops (the stop token is the event).
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, stop, d, [] { return false; });
}

void TrainingLoop::step_done(uint64_t round, double running_loss) {
  report_.step_done();
  if (background_) eval_seconds_ += background_->poll();
  // Training time only: the evaluations between epochs are not part of a round.
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() - eval_seconds_;
  state_.update([&](proto::Status& st) {
    st.set_round(round);
    st.set_rounds_per_second(elapsed > 0 ? static_cast<double>(round - start_round_) / elapsed : 0.0);
    st.set_comm_ms_per_round(comm_ms_per_round(round));
    if (st.epoch() == 0) st.set_loss(running_loss);
  });
}

void TrainingLoop::evaluated(uint32_t epoch, double progress, double train_loss, double train_accuracy,
                             size_t samples, double seconds) {
  const auto eval_start = std::chrono::steady_clock::now();
  const double wall = std::chrono::duration<double>(eval_start - start_).count();
  // Everything but the test figures, as it stands at this point.
  proto::EpochRecord rec;
  rec.set_epoch(epoch);
  rec.set_progress(progress);
  rec.set_loss(train_loss);
  rec.set_train_accuracy(train_accuracy);
  rec.set_samples_per_second(seconds > 0 ? static_cast<double>(samples) / seconds : 0.0);
  rec.set_wall_seconds(wall);
  rec.set_train_seconds(wall - eval_seconds_);
  rec.set_learning_rate(trainer_.current_lr());
  rec.set_samples(static_cast<uint32_t>(samples));
  const proto::Status st = state_.snapshot();
  rec.set_consensus_distance(st.consensus_distance());
  rec.set_round(trainer_.step_count());
  rec.set_bytes_sent(st.bytes_sent());
  rec.set_segments_skipped(st.segments_skipped());
  rec.set_rounds_per_second(st.rounds_per_second());
  rec.set_comm_ms_per_round(st.comm_ms_per_round());
  const uint64_t rounds = trainer_.step_count() - start_round_;
  rec.set_compute_ms_per_round(rounds > 0 ? 1000.0 * compute_seconds_ / static_cast<double>(rounds) : 0.0);
  if (background_) {
    eval_seconds_ += background_->submit(
        trainer_.model().params(), [this, rec](const trainer::EvalResult& ev, std::span<const float> params) {
          publish(rec, ev, param_hash(params));
        });
    return;
  }
  const trainer::EvalResult ev = trainer_.evaluate(test_);
  publish(std::move(rec), ev, param_hash(trainer_.model().params()));
  eval_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - eval_start).count();
}

void TrainingLoop::publish(proto::EpochRecord rec, const trainer::EvalResult& ev, const std::string& hash) {
  rec.set_test_loss(ev.loss);
  rec.set_test_accuracy(ev.accuracy);
  report_.publish(rec, hash);
}

}  // namespace gossipd::daemon
