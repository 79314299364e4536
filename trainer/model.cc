#include "trainer/model.h"

#include <cassert>
#include <stdexcept>

namespace gossipd::trainer {

Model::Model(Shape input) : input_(input) {}

Shape Model::current_shape() const { return layers_.empty() ? input_ : layers_.back()->output_shape(); }

void Model::add(std::unique_ptr<Layer> layer, std::string block) {
  if (finalized_) throw std::logic_error("Model::add after finalize");
  if (layer->param_count() > 0 && block.empty()) {
    block = layer->kind() + std::to_string(layers_.size());
  }
  layers_.push_back(std::move(layer));
  blocks_.push_back(std::move(block));
}

void Model::finalize(uint64_t seed) {
  if (finalized_) throw std::logic_error("Model::finalize called twice");
  size_t total = 0;
  for (const auto& l : layers_) total += l->param_count();
  params_.assign(total, 0.0f);
  grads_.assign(total, 0.0f);
  size_t offset = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const size_t n = layers_[i]->param_count();
    if (n == 0) continue;
    layers_[i]->bind(std::span<float>(params_).subspan(offset, n),
                     std::span<float>(grads_).subspan(offset, n));
    if (!segments_.empty() && segments_.back().name == blocks_[i]) {
      segments_.back().length += n;
    } else {
      segments_.push_back({blocks_[i], offset, n});
    }
    offset += n;
  }
  Rng rng(seed);
  for (auto& l : layers_) l->init_params(rng);
  acts_.resize(layers_.size());
  dacts_.resize(layers_.size());
  finalized_ = true;
}

void Model::ensure_batch(int batch) {
  if (batch <= capacity_) return;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const size_t n = layers_[i]->output_shape().size() * static_cast<size_t>(batch);
    acts_[i].resize(n);
    dacts_[i].resize(n);
  }
  capacity_ = batch;
}

void Model::host(std::vector<ParamSegment> segments, std::vector<float> initial) {
  if (finalized_ || !layers_.empty()) throw std::logic_error("Model::host on a model with layers");
  size_t offset = 0;
  for (const ParamSegment& s : segments) {
    if (s.offset != offset || s.length == 0)
      throw std::invalid_argument("hosted segment '" + s.name + "' is not the next non-empty run");
    offset += s.length;
  }
  if (offset != initial.size())
    throw std::invalid_argument("hosted segments hold " + std::to_string(offset) +
                                " floats, the initial values " + std::to_string(initial.size()));
  params_ = std::move(initial);
  grads_.assign(params_.size(), 0.0f);
  segments_ = std::move(segments);
  finalized_ = true;
}

const float* Model::forward(const float* input, int batch) {
  assert(finalized_);
  ensure_batch(batch);
  const float* in = input;
  for (size_t i = 0; i < layers_.size(); ++i) {
    layers_[i]->forward(in, acts_[i].data(), batch);
    in = acts_[i].data();
  }
  return in;
}

void Model::backward(const float* input, const float* dlogits, int batch) {
  assert(finalized_ && batch <= capacity_);
  const float* dout = dlogits;
  for (size_t i = layers_.size(); i-- > 0;) {
    const float* in = i == 0 ? input : acts_[i - 1].data();
    float* din = i == 0 ? nullptr : dacts_[i - 1].data();
    layers_[i]->backward(in, acts_[i].data(), dout, din, batch);
    dout = din;
  }
}

std::vector<GemmShape> Model::gemm_shapes(int batch) const {
  std::vector<GemmShape> out;
  for (size_t i = 0; i < layers_.size(); ++i) layers_[i]->append_gemms(batch, i != 0, out);
  return out;
}

}  // namespace gossipd::trainer
