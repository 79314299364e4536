#include "daemon/worker/momentum_fit.h"

#include <algorithm>

namespace gossipd::daemon {

void MomentumFit::add(std::span<const float> params, std::span<const float> grads, float lr,
                      float weight_decay) {
  if (before_.size() != params.size() || grads.size() != params.size()) {  // the first step (or a new model)
    before_.assign(params.begin(), params.end());
    moved_.clear();
    return;
  }
  const bool fit = moved_.size() == params.size();
  moved_.resize(params.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const double moved = static_cast<double>(params[i]) - before_[i];
    if (fit) {
      const double step =
          static_cast<double>(lr) * (grads[i] + static_cast<double>(weight_decay) * before_[i]);
      num += (moved + step) * moved_[i];
      den += static_cast<double>(moved_[i]) * moved_[i];
    }
    moved_[i] = static_cast<float>(moved);
  }
  std::copy(params.begin(), params.end(), before_.begin());
  if (fit) {
    num_ += num;
    den_ += den;
    ++steps_;
  }
}

std::optional<double> MomentumFit::momentum() const {
  if (steps_ == 0 || den_ <= 0) return std::nullopt;
  return num_ / den_;
}

}  // namespace gossipd::daemon
