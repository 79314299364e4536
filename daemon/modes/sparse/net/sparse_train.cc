#include "daemon/modes/sparse/net/sparse_train.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "trainer/loss.h"
#include "trainer/rng.h"

namespace gossipd::trainer::sparse {

SparseModel make_trainable(const SparseNet& pattern, uint32_t classes, uint64_t seed) {
  SparseModel m{pattern, {}, std::vector<float>(classes, 0.0f)};
  for (size_t l = 0; l < m.net.layers.size(); ++l) {
    SparseLayer& layer = m.net.layers[l];
    Rng rng = Rng::derive(seed, 1, l);
    for (uint32_t j = 0; j < layer.neurons; ++j) {
      const uint32_t fan_in = layer.offsets[j + 1] - layer.offsets[j];
      const double stddev = std::sqrt(2.0 / std::max<uint32_t>(fan_in, 1));
      for (uint32_t e = layer.offsets[j]; e < layer.offsets[j + 1]; ++e)
        layer.weights[e] = static_cast<float>(rng.normal() * stddev);
    }
    std::fill(layer.bias.begin(), layer.bias.end(), 0.0f);
  }
  m.head.classes = classes;
  m.head.neurons.resize(pattern.neurons);
  for (uint32_t j = 0; j < pattern.neurons; ++j) m.head.neurons[j] = j;
  m.head.weights.resize(size_t{classes} * pattern.neurons);
  Rng rng = Rng::derive(seed, 2);
  const double bound = std::sqrt(6.0 / (pattern.neurons + classes));
  for (float& v : m.head.weights) v = static_cast<float>((2 * rng.uniform() - 1) * bound);
  return m;
}

SparseInputs pick_samples(const SparseInputs& inputs, std::span<const uint32_t> which) {
  SparseInputs out;
  out.neurons = inputs.neurons;
  for (uint32_t s : which) {
    const auto first = inputs.offsets[s], last = inputs.offsets[s + 1];
    out.index.insert(out.index.end(), inputs.index.begin() + first, inputs.index.begin() + last);
    out.value.insert(out.value.end(), inputs.value.begin() + first, inputs.value.begin() + last);
    out.offsets.push_back(static_cast<uint32_t>(out.index.size()));
  }
  return out;
}

void load_batch(const SparseBatch& b, std::span<float> y, const std::vector<uint32_t>* only) {
  std::fill(y.begin(), y.end(), 0.0f);
  for (size_t lane = 0; lane < b.count; ++lane) {
    const size_t s = b.first + lane;
    for (uint32_t k = b.inputs.offsets[s]; k < b.inputs.offsets[s + 1]; ++k) {
      const uint32_t j = b.inputs.index[k];
      if (only != nullptr && !std::binary_search(only->begin(), only->end(), j)) continue;
      y[size_t{j} * b.count + lane] = b.inputs.value[k];
    }
  }
}

SparseStep softmax_step(std::span<const float> logits, const SparseBatch& b, uint32_t classes,
                        std::span<float> dlogits) {
  const std::vector<float> rows = samples_major(logits, classes, b.count);
  std::vector<float> d(dlogits.empty() ? 0 : rows.size());
  const LossResult r = SoftmaxCrossEntropy(static_cast<int>(classes))
                           .compute(rows.data(), b.labels.subspan(b.first, b.count), d);
  if (!d.empty()) to_class_major(d, classes, b.count, dlogits);
  return {r.loss, r.correct};
}

void SparseUpdate::step(size_t k, std::span<float> p, std::span<const float> g, float lr) {
  if (k >= per_vector_.size()) per_vector_.resize(k + 1);
  if (!per_vector_[k])
    per_vector_[k] = std::make_unique<Optimizer>(o_, std::vector<ParamSegment>{{"", 0, p.size()}}, p.size());
  per_vector_[k]->step(p, g, lr);
}

SparseTrainer::SparseTrainer(SparseModel model, OptimizerOptions o) : m_(std::move(model)), update_(o) {
  for (const SparseLayer& layer : m_.net.layers) {
    dw_.emplace_back(layer.edges());
    db_.emplace_back(layer.neurons);
  }
  dv_.resize(m_.head.weights.size());
  dc_.resize(m_.head.classes);
}

void SparseTrainer::forward(const SparseBatch& b) {
  if (b.inputs.neurons != m_.net.neurons) {
    throw std::invalid_argument("the inputs have " + std::to_string(b.inputs.neurons) +
                                " neurons, the network " + std::to_string(m_.net.neurons));
  }
  const size_t size = size_t{m_.net.neurons} * b.count;
  ys_.resize(m_.net.layers.size() + 1);
  for (auto& y : ys_) y.resize(size);
  load_batch(b, ys_[0]);
  const Block blk{b.count, b.count};
  for (size_t l = 0; l < m_.net.layers.size(); ++l)
    train_forward(m_.net.layers[l], nullptr, ys_[l].data(), ys_[l + 1].data(), blk);
  logits_.resize(size_t{m_.head.classes} * b.count);
  for (uint32_t c = 0; c < m_.head.classes; ++c)
    std::fill_n(logits_.begin() + static_cast<ptrdiff_t>(c * b.count), b.count, m_.head_bias[c]);
  head_forward(m_.head, ys_.back().data(), blk, logits_.data());
}

SparseStep SparseTrainer::step(const SparseBatch& b, float lr) {
  forward(b);
  dlogits_.resize(logits_.size());
  const SparseStep r = softmax_step(logits_, b, m_.head.classes, dlogits_);
  const Block blk{b.count, b.count};
  std::fill(dv_.begin(), dv_.end(), 0.0f);
  for (uint32_t c = 0; c < m_.head.classes; ++c) {
    float s = 0;
    for (size_t t = 0; t < b.count; ++t) s += dlogits_[c * b.count + t];
    dc_[c] = s;
  }
  g_.resize(ys_.back().size());
  head_backward(m_.head, ys_.back().data(), dlogits_.data(), blk, dv_.data(), g_.data());
  for (size_t l = m_.net.layers.size(); l-- > 0;) {
    std::fill(dw_[l].begin(), dw_[l].end(), 0.0f);
    std::fill(db_[l].begin(), db_[l].end(), 0.0f);
    float* gprev = nullptr;
    if (l > 0) {
      gprev_.assign(g_.size(), 0.0f);
      gprev = gprev_.data();
    }
    train_backward(m_.net.layers[l], nullptr, ys_[l].data(), ys_[l + 1].data(), g_.data(), blk, dw_[l].data(),
                   db_[l].data(), gprev);
    std::swap(g_, gprev_);
  }
  size_t k = 0;
  for (size_t l = 0; l < m_.net.layers.size(); ++l) {
    update_.step(k++, m_.net.layers[l].weights, dw_[l], lr);
    update_.step(k++, m_.net.layers[l].bias, db_[l], lr);
  }
  update_.step(k++, m_.head.weights, dv_, lr);
  update_.step(k, m_.head_bias, dc_, lr);
  return r;
}

SparseStep SparseTrainer::evaluate(const SparseInputs& inputs, std::span<const uint8_t> labels,
                                   size_t batch) {
  SparseStep total;
  for (size_t first = 0; first < inputs.count(); first += batch) {
    const SparseBatch b{inputs, labels, first, std::min(batch, inputs.count() - first)};
    forward(b);
    const SparseStep r = softmax_step(logits_, b, m_.head.classes, {});
    total.loss += r.loss * static_cast<double>(b.count);
    total.correct += r.correct;
  }
  if (inputs.count() > 0) total.loss /= static_cast<double>(inputs.count());
  return total;
}

}  // namespace gossipd::trainer::sparse
