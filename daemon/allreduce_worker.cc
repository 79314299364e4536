#include "daemon/allreduce_worker.h"

#include <cstdio>

#include "protocol/broadcast_ring.h"
#include "protocol/errors.h"
#include "protocol/group.h"
#include "protocol/ring_collectives.h"

namespace gossipd::daemon {
namespace {

constexpr uint32_t kAllreduceTag = 1;

}  // namespace

AllreduceWorker::AllreduceWorker(protocol::Node& node, std::vector<std::string> members,
                                 trainer::Trainer& trainer, const trainer::Dataset& test, WorkerState& state,
                                 MetricsRegistry& metrics, JsonLinesWriter& log, AllreduceWorkerOptions options)
    : node_(node),
      members_(std::move(members)),
      trainer_(trainer),
      test_(test),
      state_(state),
      log_(log),
      options_(options),
      rounds_(metrics.counter("gossipd_rounds_total", "Training rounds (steps) completed")),
      epoch_gauge_(metrics.gauge("gossipd_epoch", "Epochs of local data completed")),
      loss_gauge_(metrics.gauge("gossipd_loss", "Mean training loss of the last epoch")),
      accuracy_gauge_(metrics.gauge("gossipd_test_accuracy", "Test accuracy after the last epoch")) {}

size_t AllreduceWorker::steps_per_epoch(size_t dataset_size, size_t members, size_t batch) {
  const size_t per_member = dataset_size / std::max<size_t>(members, 1);
  return std::max<size_t>(1, per_member / std::max<size_t>(batch, 1));
}

void AllreduceWorker::run(std::stop_token stop) {
  protocol::CollectiveOptions copts;
  copts.timeout = options_.startup_timeout;
  copts.stop = stop;
  protocol::Group group(node_, kAllreduceTag, members_, copts);
  const float scale = 1.0f / static_cast<float>(group.size());
  const size_t batch = trainer_.options().batch;
  const size_t steps = steps_per_epoch(options_.train_size, group.size(), batch);

  protocol::Barrier(group).run();  // every member is up before the first step
  group.options().timeout = options_.timeout;
  start_ = std::chrono::steady_clock::now();
  state_.update([&](proto::Status& s) { s.set_state("training"); });

  for (int e = 0; e < options_.epochs; ++e) {
    const auto epoch_start = std::chrono::steady_clock::now();
    trainer_.sampler().start_epoch(static_cast<uint32_t>(e));
    double loss_sum = 0;
    size_t correct = 0, samples = 0;
    for (size_t s = 0; s < steps; ++s) {
      if (stop.stop_requested()) throw protocol::Aborted(node_.id(), "training");
      trainer_.set_epoch_progress(e + static_cast<double>(s) / static_cast<double>(steps));
      trainer::StepResult r = trainer_.compute_gradients(trainer_.sampler().next_batch(batch));
      auto grads = trainer_.model().grads();
      protocol::AllreduceRing(group, grads).run();
      for (float& g : grads) g *= scale;
      trainer_.apply_gradients(trainer_.current_lr());
      loss_sum += r.loss * r.samples;
      correct += static_cast<size_t>(r.correct);
      samples += static_cast<size_t>(r.samples);
      rounds_.add();
      const uint64_t round = trainer_.step_count();
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      state_.update([&](proto::Status& st) {
        st.set_round(round);
        st.set_rounds_per_second(elapsed > 0 ? static_cast<double>(round) / elapsed : 0.0);
        if (st.epoch() == 0) st.set_loss(loss_sum / static_cast<double>(samples));
      });
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    finish_epoch(static_cast<uint32_t>(e + 1), loss_sum / static_cast<double>(samples),
                 static_cast<double>(correct) / static_cast<double>(samples), samples, seconds);
  }
  trainer_.set_epoch_progress(options_.epochs);
}

void AllreduceWorker::finish_epoch(uint32_t epoch, double loss, double accuracy, size_t samples,
                                   double seconds) {
  trainer::EvalResult ev = trainer_.evaluate(test_);
  const std::string hash = param_hash(trainer_.model().params());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  state_.update([&](proto::Status& s) {
    s.set_epoch(epoch);
    s.set_loss(loss);
    s.set_test_accuracy(ev.accuracy);
    s.set_test_loss(ev.loss);
    s.set_param_hash(hash);
  });
  epoch_gauge_.set(epoch);
  loss_gauge_.set(loss);
  accuracy_gauge_.set(ev.accuracy);
  proto::EpochRecord rec;
  rec.set_epoch(epoch);
  rec.set_loss(loss);
  rec.set_train_accuracy(accuracy);
  rec.set_test_loss(ev.loss);
  rec.set_test_accuracy(ev.accuracy);
  rec.set_samples_per_second(seconds > 0 ? static_cast<double>(samples) / seconds : 0.0);
  rec.set_wall_seconds(wall);
  rec.set_learning_rate(trainer_.current_lr());
  rec.set_samples(static_cast<uint32_t>(samples));
  log_.write(rec);
  if (!options_.quiet) {
    std::printf("[%s] epoch %u/%d  loss %.4f  train_acc %.4f  test_acc %.4f  round %llu  %.1f s\n",
                node_.id().c_str(), epoch, options_.epochs, loss, accuracy, ev.accuracy,
                static_cast<unsigned long long>(trainer_.step_count()), wall);
    std::fflush(stdout);
  }
}

}  // namespace gossipd::daemon
