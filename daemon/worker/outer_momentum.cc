#include "daemon/worker/outer_momentum.h"

#include <CLI/CLI.hpp>
#include <string>

#include "daemon/config/cli.h"
#include "daemon/config/mode_flags.h"

namespace gossipd::daemon {

void add_outer_momentum_flag(ModeFlags& flags, float& into) {
  flags
      .option(
          "--outer-momentum", into,
          "With --local-steps H > 1: Nesterov momentum M of an outer step on each exchange window's change "
          "(DiLoCo's outer optimizer, outer learning rate 1; 0: the plain exchange)")
      ->capture_default_str();
}

void check_outer_momentum(float momentum, uint32_t local_steps) {
  if (!(momentum >= 0.0f && momentum < 1.0f))
    throw UsageError("--outer-momentum " + std::to_string(momentum) + ": a momentum in [0, 1)");
  if (momentum > 0.0f && local_steps < 2)
    throw UsageError("--outer-momentum steps over exchange windows: give --local-steps H > 1 with it");
}

void OuterMomentum::restart(std::span<const float> x) {
  start_.assign(x.begin(), x.end());
  velocity_.assign(x.size(), 0.0f);
}

void OuterMomentum::step(std::span<float> x) {
  if (!on()) return;
  if (start_.size() != x.size()) return restart(x);
  for (size_t i = 0; i < x.size(); ++i) {
    const float delta = start_[i] - x[i];
    velocity_[i] = momentum_ * velocity_[i] + delta;
    x[i] = start_[i] - (delta + momentum_ * velocity_[i]);
    start_[i] = x[i];
  }
}

}  // namespace gossipd::daemon
