#include "trainer/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace gossipd::trainer {

Trainer::Trainer(std::unique_ptr<Model> model, const Dataset& train, TrainerOptions options)
    : model_(std::move(model)),
      train_(train),
      options_(options),
      optimizer_(options.optimizer, model_->segments(), model_->params().size()),
      schedule_(options.schedule),
      loss_(model_->classes(), options.label_smoothing),
      evaluator_(*model_, options.eval_batch, options.label_smoothing),
      sampler_(train.size(), options.sampler) {
  if (options.batch == 0) throw std::invalid_argument("batch size must be > 0");
  if (train.sample_size() != model_->input_shape().size()) {
    throw std::invalid_argument("dataset samples have " + std::to_string(train.sample_size()) +
                                " values but the model expects " +
                                std::to_string(model_->input_shape().size()));
  }
}

void gather_samples(const Dataset& data, std::span<const uint32_t> indices, std::vector<float>& input,
                    std::vector<uint8_t>& labels) {
  const size_t d = data.sample_size();
  input.resize(indices.size() * d);
  labels.resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    std::memcpy(input.data() + i * d, data.image(indices[i]), sizeof(float) * d);
    labels[i] = data.labels[indices[i]];
  }
}

Evaluator::Evaluator(Model& model, size_t batch, float label_smoothing)
    : model_(model), batch_(batch), loss_(model.classes(), label_smoothing) {
  if (batch == 0) throw std::invalid_argument("evaluation batch size must be > 0");
}

EvalBatch Evaluator::run_batch(const Dataset& data, size_t b) {
  const size_t first = b * batch_;
  if (first >= data.size()) return {};
  const size_t n = std::min(batch_, data.size() - first);
  idx_.resize(n);
  for (size_t i = 0; i < n; ++i) idx_[i] = static_cast<uint32_t>(first + i);
  gather_samples(data, idx_, input_, labels_);
  const float* logits = model_.forward(input_.data(), static_cast<int>(n));
  const LossResult lr = loss_.compute(logits, labels_, {});
  return EvalBatch{lr.loss * static_cast<double>(n), static_cast<size_t>(lr.correct), n};
}

EvalResult Evaluator::run(const Dataset& data) {
  sums_.resize(batches(data));
  for (size_t b = 0; b < sums_.size(); ++b) sums_[b] = run_batch(data, b);
  return total(sums_);
}

EvalResult Evaluator::total(std::span<const EvalBatch> batches) {
  double loss_sum = 0;
  size_t correct = 0;
  EvalResult r;
  for (const EvalBatch& b : batches) {
    loss_sum += b.loss_sum;
    correct += b.correct;
    r.samples += b.samples;
  }
  if (r.samples > 0) {
    r.loss = loss_sum / static_cast<double>(r.samples);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(r.samples);
  }
  return r;
}

StepResult Trainer::compute_gradients(std::span<const uint32_t> indices) {
  if (hosted_.gradients) return hosted_.gradients();
  const int batch = static_cast<int>(indices.size());
  gather_samples(train_, indices, input_, labels_);
  dlogits_.resize(indices.size() * static_cast<size_t>(model_->classes()));
  const float* logits = model_->forward(input_.data(), batch);
  LossResult r = loss_.compute(logits, labels_, dlogits_);
  model_->backward(input_.data(), dlogits_.data(), batch);
  return StepResult{r.loss, r.correct, batch};
}

void Trainer::apply_gradients(float lr) {
  if (hosted_.apply) {
    hosted_.apply(lr);
  } else {
    optimizer_.step(model_->params(), model_->grads(), lr);
  }
  ++steps_;
}

float Trainer::current_lr() const { return schedule_.at(epoch_progress_); }

StepResult Trainer::train_step(std::span<const uint32_t> indices) {
  StepResult r = compute_gradients(indices);
  apply_gradients(current_lr());
  return r;
}

EpochStats Trainer::train_epoch(uint32_t epoch) {
  const auto start = std::chrono::steady_clock::now();
  EpochStats s;
  s.epoch = epoch;
  sampler_.start_epoch(epoch);
  const size_t batches = sampler_.batches_per_epoch(options_.batch);
  double loss_sum = 0;
  size_t correct = 0;
  for (size_t b = 0; b < batches; ++b) {
    epoch_progress_ = epoch + static_cast<double>(b) / static_cast<double>(batches);
    auto idx = sampler_.next_batch(options_.batch);
    s.last_lr = current_lr();
    StepResult r = train_step(idx);
    loss_sum += r.loss * r.samples;
    correct += static_cast<size_t>(r.correct);
    s.samples += static_cast<size_t>(r.samples);
  }
  epoch_progress_ = epoch + 1.0;
  s.loss = s.samples ? loss_sum / static_cast<double>(s.samples) : 0.0;
  s.train_accuracy = s.samples ? static_cast<double>(correct) / static_cast<double>(s.samples) : 0.0;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

EvalResult Trainer::evaluate(const Dataset& data) {
  return hosted_.evaluate ? hosted_.evaluate() : evaluator_.run(data);
}

void Trainer::reshard(SamplerOptions sampler, size_t batch) {
  if (batch == 0) throw std::invalid_argument("batch size must be > 0");
  options_.sampler = sampler;
  options_.batch = batch;
  sampler_ = BatchSampler(train_.size(), sampler);
}

}  // namespace gossipd::trainer
