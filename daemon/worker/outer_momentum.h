#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gossipd::daemon {

// An outer optimizer over exchanges (--outer-momentum M with --local-steps):
// SGD with Nesterov momentum on the change one exchange window made, as
// DiLoCo (Douillard et al. 2023) and SlowMo (Wang et al. 2020) apply it,
// with an outer learning rate of 1. With x0 where the window started and x
// the parameters after its exchange, Δ = x0 − x, m ← M·m + Δ and
// x ← x0 − (Δ + M·m); the next window starts there. M = 0 is the plain
// exchange (x untouched). Every member that starts from the same x0 and m
// and gets the same x ends with the same parameters.
class OuterMomentum {
 public:
  explicit OuterMomentum(float momentum) : momentum_(momentum) {}

  bool on() const { return momentum_ != 0.0f; }
  // The window starts at x, the momentum at zero (the start, a resync).
  void restart(std::span<const float> x);
  // After an exchange: the outer step on x (in place); a window that was
  // never started starts here.
  void step(std::span<float> x);

 private:
  float momentum_;
  std::vector<float> start_;  // x0
  std::vector<float> velocity_;
};

class ModeFlags;
// gossipd run's --outer-momentum, stored in `into` (a mode that takes
// --local-steps adds it), and its check: M in [0, 1), and H > 1 where M > 0.
void add_outer_momentum_flag(ModeFlags& flags, float& into);
void check_outer_momentum(float momentum, uint32_t local_steps);

}  // namespace gossipd::daemon
