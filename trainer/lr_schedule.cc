#include "trainer/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gossipd::trainer {

LrSchedule::LrSchedule(ScheduleOptions options) : options_(std::move(options)) {
  if (options_.base_lr < 0) throw std::invalid_argument("learning rate must be >= 0");
  if (options_.warmup_epochs < 0) throw std::invalid_argument("warm-up epochs must be >= 0");
  if (options_.total_epochs <= 0) throw std::invalid_argument("total epochs must be > 0");
  std::sort(options_.step_epochs.begin(), options_.step_epochs.end());
}

float LrSchedule::at(double epoch) const {
  const auto& o = options_;
  if (epoch < o.warmup_epochs) {
    const double f = epoch / o.warmup_epochs;
    return static_cast<float>(o.base_lr * (o.warmup_start + (1.0 - o.warmup_start) * f));
  }
  const double span = std::max(1e-9, static_cast<double>(o.total_epochs - o.warmup_epochs));
  const double t = std::clamp((epoch - o.warmup_epochs) / span, 0.0, 1.0);
  switch (o.decay) {
    case Decay::kConstant:
      return o.base_lr;
    case Decay::kCosine:
      return static_cast<float>(o.final_lr + (o.base_lr - o.final_lr) * 0.5 * (1.0 + std::cos(M_PI * t)));
    case Decay::kPoly:
      return static_cast<float>(o.final_lr + (o.base_lr - o.final_lr) * std::pow(1.0 - t, o.power));
    case Decay::kStep: {
      double lr = o.base_lr;
      for (float s : o.step_epochs) {
        if (epoch >= s) lr *= o.gamma;
      }
      return static_cast<float>(lr);
    }
  }
  return o.base_lr;
}

Decay parse_decay(const std::string& name) {
  if (name == "constant") return Decay::kConstant;
  if (name == "cosine") return Decay::kCosine;
  if (name == "step") return Decay::kStep;
  if (name == "poly") return Decay::kPoly;
  throw std::invalid_argument("unknown learning-rate decay '" + name +
                              "' (known: constant, cosine, step, poly)");
}

}  // namespace gossipd::trainer
