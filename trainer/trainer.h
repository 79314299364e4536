#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "trainer/dataset.h"
#include "trainer/loss.h"
#include "trainer/lr_schedule.h"
#include "trainer/model.h"
#include "trainer/optimizer.h"
#include "trainer/sampler.h"

namespace gossipd::trainer {

struct TrainerOptions {
  size_t batch = 64;
  size_t eval_batch = 256;
  float label_smoothing = 0.0f;
  OptimizerOptions optimizer;
  ScheduleOptions schedule;
  SamplerOptions sampler;
};

struct StepResult {
  double loss = 0;
  int correct = 0;
  int samples = 0;
};

struct EpochStats {
  uint32_t epoch = 0;
  double loss = 0;            // mean training loss over the epoch
  double train_accuracy = 0;  // running accuracy of the training batches
  size_t samples = 0;
  double seconds = 0;
  float last_lr = 0;
};

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  size_t samples = 0;
};

// Copies the samples at `indices` into `input` (row-major, one sample per
// row) and their labels into `labels`.
void gather_samples(const Dataset& data, std::span<const uint32_t> indices, std::vector<float>& input,
                    std::vector<uint8_t>& labels);

// The sums over one evaluation batch.
struct EvalBatch {
  double loss_sum = 0;  // the batch's mean loss times its samples
  size_t correct = 0;
  size_t samples = 0;
};

// Test-set evaluation of a model: forward passes in batches of `batch`, the
// loss as training computes it. Trainer::evaluate runs one on the training
// replica; daemon::BackgroundEvaluator runs them batch by batch on a copy of
// its parameters. Results are the batches' sums added in batch order, so
// however the batches were shared out the figures are the same to the bit.
class Evaluator {
 public:
  Evaluator(Model& model, size_t batch, float label_smoothing);
  size_t batches(const Dataset& data) const { return (data.size() + batch_ - 1) / batch_; }
  // Batch `b`: samples [b * batch, min((b + 1) * batch, data.size())).
  EvalBatch run_batch(const Dataset& data, size_t b);
  EvalResult run(const Dataset& data);
  static EvalResult total(std::span<const EvalBatch> batches);

 private:
  Model& model_;
  size_t batch_;
  SoftmaxCrossEntropy loss_;
  std::vector<uint32_t> idx_;
  std::vector<float> input_;
  std::vector<uint8_t> labels_;
  std::vector<EvalBatch> sums_;
};

// A local step computed outside the trainer (a PyTorch process): it takes
// the place of the forward and backward passes and of the optimizer's
// update, on the model's own buffers.
struct HostedStep {
  // The gradients are in model().grads() (their loss and accuracy, when known).
  std::function<StepResult()> gradients;
  // Applies the gradients to model().params() (and its state to optimizer().state()).
  std::function<void(float lr)> apply;
  // The test figures the host measured last (evaluate() returns them).
  std::function<EvalResult()> evaluate;
};

// Local training of one replica. The steps are split so that averaging
// protocols can sit between them: compute_gradients() (then, say, an
// allreduce of model().grads()), apply_gradients().
class Trainer {
 public:
  Trainer(std::unique_ptr<Model> model, const Dataset& train, TrainerOptions options);

  // Forward + backward on the given training samples; fills model().grads().
  StepResult compute_gradients(std::span<const uint32_t> indices);
  void apply_gradients(float lr);
  // From now on compute_gradients and apply_gradients run `step` instead.
  void host(HostedStep step) { hosted_ = std::move(step); }
  // Whether a host applies the steps (its own optimizer, not optimizer()).
  bool hosted() const { return static_cast<bool>(hosted_.apply); }
  // Counts a step whose update the caller applied itself (SGP updates the
  // push-sum numerators, not the model's parameters).
  void count_step() { ++steps_; }
  // Adopts the step count of the peers this replica re-synchronised with.
  void set_step_count(uint64_t steps) { steps_ = steps; }
  // compute_gradients + apply_gradients at the schedule's rate for the
  // current (fractional) epoch.
  StepResult train_step(std::span<const uint32_t> indices);
  // One pass over this worker's samples; the sampler decides which.
  EpochStats train_epoch(uint32_t epoch);
  EvalResult evaluate(const Dataset& data);

  float current_lr() const;
  // Sets the fractional epoch that drives the schedule (for callers that run
  // their own step loop, e.g. with an allreduce between the two halves).
  void set_epoch_progress(double epoch) { epoch_progress_ = epoch; }
  Model& model() { return *model_; }
  const Model& model() const { return *model_; }
  const Dataset& train_data() const { return train_; }
  Optimizer& optimizer() { return optimizer_; }
  const Optimizer& optimizer() const { return optimizer_; }
  // Evaluates this replica's model (what evaluate() runs).
  Evaluator& evaluator() { return evaluator_; }
  BatchSampler& sampler() { return sampler_; }
  // Before the first step: this worker's share of the data and batch, for
  // a mode that learns its data-parallel shape only when its members meet
  // (a planned pipeline's replicas).
  void reshard(SamplerOptions sampler, size_t batch);
  const TrainerOptions& options() const { return options_; }
  uint64_t step_count() const { return steps_; }
  double epoch_progress() const { return epoch_progress_; }

 private:
  std::unique_ptr<Model> model_;
  const Dataset& train_;
  TrainerOptions options_;
  Optimizer optimizer_;
  LrSchedule schedule_;
  SoftmaxCrossEntropy loss_;
  Evaluator evaluator_;
  BatchSampler sampler_;
  std::vector<float> input_;
  std::vector<uint8_t> labels_;
  std::vector<float> dlogits_;
  HostedStep hosted_;
  uint64_t steps_ = 0;
  double epoch_progress_ = 0;  // fractional epoch, drives the schedule
};

}  // namespace gossipd::trainer
