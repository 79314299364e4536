#include "trainer/optimizer.h"

#include <cmath>
#include <stdexcept>

namespace gossipd::trainer {
namespace {

double squared(std::span<const float> x) {
  double s = 0;
  for (float v : x) s += static_cast<double>(v) * v;
  return s;
}

}  // namespace

Optimizer::Optimizer(OptimizerOptions options, std::vector<ParamSegment> segments, size_t param_count)
    : options_(options),
      segments_(std::move(segments)),
      velocity_(param_count * options.state_per_param, 0.0f) {
  if (options.momentum < 0.0f || options.momentum >= 1.0f) {
    throw std::invalid_argument("momentum must be in [0, 1)");
  }
  if (options.weight_decay < 0.0f) throw std::invalid_argument("weight decay must be >= 0");
  if (options.nesterov && options.momentum == 0.0f) {
    throw std::invalid_argument("Nesterov needs a momentum > 0");
  }
  if (options.kind == OptimizerKind::kLars && options.lars_eta <= 0.0f) {
    throw std::invalid_argument("LARS eta must be > 0");
  }
}

std::string Optimizer::name() const {
  if (options_.kind == OptimizerKind::kLars) return "lars";
  if (options_.momentum == 0.0f) return "sgd";
  return options_.nesterov ? "nesterov" : "momentum";
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, float lr) {
  step(params, grads, lr, nullptr);
}

void Optimizer::step(std::span<float> params, std::span<const float> grads, float lr, const NormSum& sum) {
  if (params.size() != velocity_.size() || grads.size() != velocity_.size()) {
    throw std::invalid_argument("optimizer: parameter and gradient sizes differ from its state");
  }
  if (options_.kind == OptimizerKind::kSgd) {
    sgd_step(params, grads, velocity_, lr);
    return;
  }
  std::vector<double> squares;
  for (const auto& s : segments_) {
    squares.push_back(squared(params.subspan(s.offset, s.length)));
    squares.push_back(squared(grads.subspan(s.offset, s.length)));
  }
  if (sum) sum(squares);
  for (size_t k = 0; k < segments_.size(); ++k) {
    const ParamSegment& s = segments_[k];
    lars_step(params.subspan(s.offset, s.length), grads.subspan(s.offset, s.length),
              std::span<float>(velocity_).subspan(s.offset, s.length), lr, std::sqrt(squares[2 * k]),
              std::sqrt(squares[2 * k + 1]));
  }
}

void Optimizer::step_segments(std::span<float> params, std::span<const float> grads, float lr, size_t first,
                              size_t last) {
  if (params.size() != velocity_.size() || grads.size() != velocity_.size() || first > last ||
      last > segments_.size()) {
    throw std::invalid_argument("optimizer: segments or sizes outside its state");
  }
  for (size_t k = first; k < last; ++k) {
    const ParamSegment& s = segments_[k];
    const std::span<float> w = params.subspan(s.offset, s.length),
                           v = std::span<float>(velocity_).subspan(s.offset, s.length);
    const std::span<const float> g = grads.subspan(s.offset, s.length);
    if (options_.kind == OptimizerKind::kSgd) {
      sgd_step(w, g, v, lr);
    } else {
      lars_step(w, g, v, lr, std::sqrt(squared(w)), std::sqrt(squared(g)));
    }
  }
}

void Optimizer::sgd_step(std::span<float> w, std::span<const float> g, std::span<float> v, float lr) const {
  const float mu = options_.momentum;
  const float wd = options_.weight_decay;
  const size_t n = w.size();
  if (mu == 0.0f) {
    for (size_t i = 0; i < n; ++i) w[i] -= lr * (g[i] + wd * w[i]);
  } else if (options_.nesterov) {
    for (size_t i = 0; i < n; ++i) {
      const float gi = g[i] + wd * w[i];
      v[i] = mu * v[i] + gi;
      w[i] -= lr * (gi + mu * v[i]);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] + g[i] + wd * w[i];
      w[i] -= lr * v[i];
    }
  }
}

void Optimizer::lars_step(std::span<float> w, std::span<const float> g, std::span<float> v, float lr,
                          double wn, double gn) const {
  const float wd = options_.weight_decay;
  double local = 1.0;
  if (wn > 0 && gn > 0) local = options_.lars_eta * wn / (gn + wd * wn);
  const float scaled = static_cast<float>(lr * local);
  const float mu = options_.momentum;
  for (size_t i = 0; i < w.size(); ++i) {
    v[i] = mu * v[i] + scaled * (g[i] + wd * w[i]);
    w[i] -= v[i];
  }
}

}  // namespace gossipd::trainer
