#include "trainer/trainer.h"

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
      sampler_(train.size(), options.sampler) {
  if (options.batch == 0) throw std::invalid_argument("batch size must be > 0");
  if (options.eval_batch == 0) throw std::invalid_argument("evaluation batch size must be > 0");
  if (train.sample_size() != model_->input_shape().size()) {
    throw std::invalid_argument("dataset samples have " + std::to_string(train.sample_size()) +
                                " values but the model expects " +
                                std::to_string(model_->input_shape().size()));
  }
}

void Trainer::gather(const Dataset& data, std::span<const uint32_t> indices) {
  const size_t d = data.sample_size();
  input_.resize(indices.size() * d);
  labels_.resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i) {
    std::memcpy(input_.data() + i * d, data.image(indices[i]), sizeof(float) * d);
    labels_[i] = data.labels[indices[i]];
  }
}

StepResult Trainer::compute_gradients(std::span<const uint32_t> indices) {
  const int batch = static_cast<int>(indices.size());
  gather(train_, indices);
  dlogits_.resize(indices.size() * static_cast<size_t>(model_->classes()));
  const float* logits = model_->forward(input_.data(), batch);
  LossResult r = loss_.compute(logits, labels_, dlogits_);
  model_->backward(input_.data(), dlogits_.data(), batch);
  return StepResult{r.loss, r.correct, batch};
}

void Trainer::apply_gradients(float lr) {
  optimizer_.step(model_->params(), model_->grads(), lr);
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
  EvalResult r;
  std::vector<uint32_t> idx;
  double loss_sum = 0;
  size_t correct = 0;
  for (size_t first = 0; first < data.size(); first += options_.eval_batch) {
    const size_t n = std::min(options_.eval_batch, data.size() - first);
    idx.resize(n);
    for (size_t i = 0; i < n; ++i) idx[i] = static_cast<uint32_t>(first + i);
    gather(data, idx);
    const float* logits = model_->forward(input_.data(), static_cast<int>(n));
    LossResult lr = loss_.compute(logits, labels_, {});
    loss_sum += lr.loss * static_cast<double>(n);
    correct += static_cast<size_t>(lr.correct);
  }
  r.samples = data.size();
  if (r.samples > 0) {
    r.loss = loss_sum / static_cast<double>(r.samples);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(r.samples);
  }
  return r;
}

}  // namespace gossipd::trainer
