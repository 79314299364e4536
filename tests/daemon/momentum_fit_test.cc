// MomentumFit finds the momentum an update sequence shows: the optimizer's
// own when nothing else moves the model, and what something else adds.
#include "daemon/worker/momentum_fit.h"

#include <gtest/gtest.h>

#include <vector>

#include "trainer/optimizer.h"
#include "trainer/rng.h"

namespace gossipd::daemon {
namespace {

// f(w) = ½·Σ a_i (w_i − c_i)², noisy gradients.
struct Quadratic {
  std::vector<float> a, c;
  trainer::Rng rng{5};
  explicit Quadratic(size_t n) : a(n), c(n) {
    for (size_t i = 0; i < n; ++i) {
      a[i] = 0.1f + static_cast<float>(i % 7) * 0.3f;
      c[i] = static_cast<float>(rng.normal());
    }
  }
  void gradient(std::span<const float> w, std::span<float> g) {
    for (size_t i = 0; i < w.size(); ++i)
      g[i] = a[i] * (w[i] - c[i]) + 0.1f * static_cast<float>(rng.normal());
  }
};

double fitted(float momentum, float weight_decay, float pull) {
  const size_t n = 500;
  Quadratic f(n);
  trainer::OptimizerOptions o;
  o.momentum = momentum;
  o.weight_decay = weight_decay;
  trainer::Optimizer opt(o, {{"w", 0, n}}, n);
  std::vector<float> w(n, 0.0f), g(n), moved(n, 0.0f);
  MomentumFit fit;
  for (int t = 0; t < 200; ++t) {
    f.gradient(w, g);
    const std::vector<float> before = w;
    opt.step(w, g, 0.05f);
    // Something besides the optimizer moves the model along its last step.
    for (size_t i = 0; i < n; ++i) w[i] += pull * moved[i];
    for (size_t i = 0; i < n; ++i) moved[i] = w[i] - before[i];
    fit.add(w, g, 0.05f, weight_decay);
  }
  EXPECT_EQ(fit.steps(), 198u);
  return fit.momentum().value_or(-1);
}

TEST(MomentumFit, FindsTheOptimizersMomentumWhenNothingElseMovesTheModel) {
  EXPECT_NEAR(fitted(0.9f, 5e-4f, 0.0f), 0.9, 1e-3);
  EXPECT_NEAR(fitted(0.5f, 0.0f, 0.0f), 0.5, 1e-3);
  EXPECT_NEAR(fitted(0.0f, 5e-4f, 0.0f), 0.0, 1e-3);
}

TEST(MomentumFit, FindsWhatAPullAlongTheLastStepAdds) {
  // Δw_{t+1} = −η·g + pull·Δw_t with no momentum: the fit is the pull.
  EXPECT_NEAR(fitted(0.0f, 0.0f, 0.4f), 0.4, 1e-3);
}

TEST(MomentumFit, NothingBeforeTwoStepsHaveMoved) {
  MomentumFit fit;
  const std::vector<float> w{1, 2}, g{0.5f, 0.5f};
  fit.add(w, g, 0.1f, 0);
  fit.add(w, g, 0.1f, 0);
  EXPECT_FALSE(fit.momentum().has_value());  // one move, nothing to fit it against
}

}  // namespace
}  // namespace gossipd::daemon
