#include "trainer/stage.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gossipd::trainer {

Stage::Stage(Model& model, size_t first, size_t last) : model_(model), first_(first), last_(last) {
  const auto& layers = model.layers();
  if (first >= last || last > layers.size()) {
    throw std::invalid_argument("stage: layers [" + std::to_string(first) + ", " + std::to_string(last) +
                                ") are not a range of the model's " + std::to_string(layers.size()));
  }
  for (size_t i = 0; i < last; ++i) {
    if (i >= first) layer_offsets_.push_back(count_);
    (i < first ? offset_ : count_) += layers[i]->param_count();
  }
  for (const ParamSegment& s : model.segments()) {
    const bool inside = s.offset >= offset_ && s.offset + s.length <= offset_ + count_;
    const bool outside = s.offset + s.length <= offset_ || s.offset >= offset_ + count_;
    if (!inside && !outside)
      throw std::invalid_argument("stage: its first or last layer splits block " + s.name);
    if (inside) segments_.push_back({s.name, s.offset - offset_, s.length});
  }
  zero_grads();
}

Shape Stage::input_shape() const {
  return first_ == 0 ? model_.input_shape() : model_.layers()[first_ - 1]->output_shape();
}

Shape Stage::output_shape() const { return model_.layers()[last_ - 1]->output_shape(); }

std::span<float> Stage::params() { return model_.params().subspan(offset_, count_); }

std::span<float> Stage::zeroed_if_fresh() const {
  const std::span<float> g = model_.grads().subspan(offset_, count_);
  for (size_t i = first_; i < last_ && (fresh_input_ || fresh_weights_); ++i) {
    if (writes_late(i) ? fresh_weights_ : fresh_input_) {
      const std::span<float> layer = g.subspan(layer_offsets_[i - first_], model_.layers()[i]->param_count());
      std::fill(layer.begin(), layer.end(), 0.0f);
    }
  }
  fresh_input_ = fresh_weights_ = false;
  return g;
}

std::span<const float> Stage::grads() const { return zeroed_if_fresh(); }
std::span<float> Stage::grads() { return zeroed_if_fresh(); }

size_t Stage::stash_floats(const Model& model, size_t first, size_t last, int batch) {
  const Shape in = first == 0 ? model.input_shape() : model.layers()[first - 1]->output_shape();
  size_t per_sample = in.size();
  for (size_t i = first; i < last; ++i) per_sample += model.layers()[i]->output_shape().size();
  return per_sample * static_cast<size_t>(batch);
}

size_t Stage::Stash::floats() const {
  size_t n = input.size();
  for (const auto& o : outputs) n += o.size();
  for (const auto& d : douts) n += d.size();
  return n;
}

Stage::Stash& Stage::take(uint64_t micro, int batch) {
  for (const Stash& s : live_) {
    if (s.micro == micro)
      throw std::logic_error("stage: micro-batch " + std::to_string(micro) + " is already in flight");
  }
  if (free_.empty()) free_.emplace_back();
  live_.push_back(std::move(free_.back()));
  free_.pop_back();
  Stash& s = live_.back();
  s.micro = micro;
  s.batch = batch;
  s.input.resize(input_shape().size() * static_cast<size_t>(batch));
  s.outputs.resize(last_ - first_);
  for (size_t i = first_; i < last_; ++i)
    s.outputs[i - first_].resize(model_.layers()[i]->output_shape().size() * static_cast<size_t>(batch));
  stashed_ += s.floats();
  most_stashed_ = std::max(most_stashed_, stashed_);
  most_in_flight_ = std::max(most_in_flight_, live_.size());
  return s;
}

Stage::Stash& Stage::find(uint64_t micro) {
  for (Stash& s : live_) {
    if (s.micro == micro) return s;
  }
  throw std::logic_error("stage: backward of micro-batch " + std::to_string(micro) +
                         ", which is not in flight");
}

void Stage::release(uint64_t micro) {
  const auto it = std::find_if(live_.begin(), live_.end(), [&](const Stash& s) { return s.micro == micro; });
  stashed_ -= it->floats();
  for (auto& d : it->douts) d.clear();
  it->input_done = false;
  if (it->weights && it->weights.use_count() == 1) spare_weights_ = std::move(it->weights);
  it->weights.reset();
  free_.push_back(std::move(*it));
  live_.erase(it);
}

std::span<const float> Stage::forward(uint64_t micro, std::span<const float> in, int batch) {
  Stash& s = take(micro, batch);
  if (in.size() != s.input.size()) {
    release(micro);
    throw std::invalid_argument("stage: input of " + std::to_string(in.size()) + " floats, expected " +
                                std::to_string(input_shape().size() * static_cast<size_t>(batch)));
  }
  std::copy(in.begin(), in.end(), s.input.begin());
  const float* x = s.input.data();
  for (size_t i = first_; i < last_; ++i) {
    model_.layers()[i]->forward(x, s.outputs[i - first_].data(), batch);
    x = s.outputs[i - first_].data();
  }
  return s.outputs.back();
}

void Stage::backward(uint64_t micro, std::span<const float> dout, std::span<float> din) {
  Stash& s = checked(micro, dout, din);
  with_weights(s, [&] { run_backward(s, dout, din, false); });
  release(micro);
}

void Stage::backward_input(uint64_t micro, std::span<const float> dout, std::span<float> din) {
  Stash& s = checked(micro, dout, din);
  const size_t before = s.floats();
  s.douts.resize(last_ - first_);
  for (size_t i = first_; i < last_; ++i) {
    if (writes_late(i)) s.douts[i - first_].resize(s.outputs[i - first_].size());
  }
  stashed_ += s.floats() - before;
  most_stashed_ = std::max(most_stashed_, stashed_);
  with_weights(s, [&] { run_backward(s, dout, din, true); });
  s.input_done = true;
}

void Stage::backward_weights(uint64_t micro) {
  Stash& s = find(micro);
  if (!s.input_done)
    throw std::logic_error("stage: weights' gradient of micro-batch " + std::to_string(micro) +
                           " before its input's");
  for (size_t i = last_; i-- > first_;) {
    if (!writes_late(i)) continue;
    Layer& layer = *model_.layers()[i];
    layer.set_accumulate(!fresh_weights_);
    layer.backward_weights(layer_input(s, i), s.douts[i - first_].data(), s.batch);
    layer.set_accumulate(false);
  }
  fresh_weights_ = false;
  release(micro);
}

Stage::Stash& Stage::checked(uint64_t micro, std::span<const float> dout, std::span<float> din) {
  Stash& s = find(micro);
  if (s.input_done)
    throw std::logic_error("stage: micro-batch " + std::to_string(micro) + " went backward already");
  if (dout.size() != s.outputs.back().size() || (!din.empty() && din.size() != s.input.size()))
    throw std::invalid_argument("stage: gradient sizes do not match micro-batch " + std::to_string(micro));
  return s;
}

template <typename F>
void Stage::with_weights(Stash& s, F&& run) {
  if (!s.weights) {
    run();
    return;
  }
  bind_layers(*s.weights);
  try {
    run();
  } catch (...) {
    bind_layers(params());
    throw;
  }
  bind_layers(params());
}

void Stage::keep_weights_in_flight() {
  if (!stash_weights_) return;
  std::shared_ptr<std::vector<float>> copy;
  for (Stash& s : live_) {
    if (s.weights) continue;
    if (!copy) {
      copy = spare_weights_ ? std::move(spare_weights_) : std::make_shared<std::vector<float>>();
      copy->assign(params().begin(), params().end());
    }
    s.weights = copy;
  }
}

void Stage::bind_layers(std::span<float> params) {
  const std::span<float> grads = model_.grads().subspan(offset_, count_);
  for (size_t i = first_; i < last_; ++i) {
    const size_t at = layer_offsets_[i - first_], n = model_.layers()[i]->param_count();
    model_.layers()[i]->bind(params.subspan(at, n), grads.subspan(at, n));
  }
}

bool Stage::writes_late(size_t layer) const { return model_.layers()[layer]->splits_backward(); }

const float* Stage::layer_input(const Stash& s, size_t layer) const {
  return layer == first_ ? s.input.data() : s.outputs[layer - first_ - 1].data();
}

// Layer by layer from the last: everything (`split` false), or the input
// gradients with every splitting layer's output gradient kept in the stash
// for backward_weights.
void Stage::run_backward(Stash& s, std::span<const float> dout, std::span<float> din, bool split) {
  const float* d = dout.data();
  if (split && writes_late(last_ - 1)) std::copy(dout.begin(), dout.end(), s.douts.back().begin());
  for (size_t i = last_; i-- > first_;) {
    float* dst = nullptr;
    if (i > first_) {
      std::vector<float>& buf = split && writes_late(i - 1) ? s.douts[i - first_ - 1] : dbuf_[i % 2];
      buf.resize(s.outputs[i - first_ - 1].size());
      dst = buf.data();
    } else if (!din.empty()) {
      dst = din.data();
    }
    Layer& layer = *model_.layers()[i];
    layer.set_accumulate(!(writes_late(i) ? fresh_weights_ : fresh_input_));
    if (split) {
      layer.backward_input(layer_input(s, i), s.outputs[i - first_].data(), d, dst, s.batch);
    } else {
      layer.backward(layer_input(s, i), s.outputs[i - first_].data(), d, dst, s.batch);
    }
    layer.set_accumulate(false);
    d = dst;
  }
  fresh_input_ = false;
  fresh_weights_ = fresh_weights_ && split;
}

}  // namespace gossipd::trainer
