// The serial training of a sparse network (net/sparse_train.h):
// its gradients against central differences of the loss, and that steps
// lower the loss while the sparsity pattern stays as it was.
#include "daemon/modes/sparse/net/sparse_train.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/sparse_nets.h"

namespace gossipd::trainer::sparse {
namespace {

using gossipd::testing::random_inputs;
using gossipd::testing::random_net;

std::vector<uint8_t> random_labels(size_t count, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint8_t> labels(count);
  for (auto& l : labels) l = static_cast<uint8_t>(rng.below(10));
  return labels;
}

double loss_of(const SparseModel& m, const SparseBatch& b) {
  SparseTrainer t(m, {});
  return t.evaluate(b.inputs, b.labels, b.count).loss;
}

// One parameter's analytic gradient against (L(p + eps) − L(p − eps)) / 2eps.
struct Probe {
  const SparseModel& m;
  const SparseBatch& b;
  int checked = 0;

  template <typename Pick>
  void check(float analytic, Pick pick, const std::string& what) {
    const float eps = 1e-3f;
    SparseModel up = m, down = m;
    pick(up) += eps;
    pick(down) -= eps;
    const double numeric = (loss_of(up, b) - loss_of(down, b)) / (2 * eps);
    EXPECT_NEAR(analytic, numeric, 0.01 * std::abs(numeric) + 1.5e-4) << what;
    if (std::abs(numeric) > 1e-3) ++checked;
  }
};

TEST(SparseTraining, GradientsMatchCentralDifferencesOfTheLoss) {
  // Biases away from zero: with none, a neuron whose inputs are all zero
  // sits on ReLU's kink, where central differences see half a slope.
  SparseModel m = make_trainable(random_net(16, 3, 0.0f, 4), 10, 9);
  Rng rng(3);
  for (SparseLayer& layer : m.net.layers)
    for (float& b : layer.bias) b = static_cast<float>(rng.uniform() * 0.4 - 0.2);
  const SparseInputs in = random_inputs(16, 12, 5);
  const std::vector<uint8_t> labels = random_labels(12, 6);
  const SparseBatch b{in, labels, 0, in.count()};
  SparseTrainer t(m, {});
  t.step(b, 0.0f);  // no update: the gradients of `m`
  const auto g = t.gradients();
  Probe probe{m, b};
  for (size_t l = 0; l < m.net.layers.size(); ++l) {
    for (size_t e = 0; e < m.net.layers[l].edges(); e += 7)
      probe.check(
          g.weights[l][e], [&](SparseModel& x) -> float& { return x.net.layers[l].weights[e]; },
          "layer " + std::to_string(l) + " edge " + std::to_string(e));
    for (size_t j = 0; j < m.net.neurons; j += 3)
      probe.check(
          g.bias[l][j], [&](SparseModel& x) -> float& { return x.net.layers[l].bias[j]; },
          "layer " + std::to_string(l) + " bias " + std::to_string(j));
  }
  for (size_t k = 0; k < m.head.weights.size(); k += 11)
    probe.check(
        g.head_weights[k], [&](SparseModel& x) -> float& { return x.head.weights[k]; },
        "head weight " + std::to_string(k));
  for (size_t c = 0; c < m.head.classes; ++c)
    probe.check(
        g.head_bias[c], [&](SparseModel& x) -> float& { return x.head_bias[c]; },
        "head bias " + std::to_string(c));
  EXPECT_GT(probe.checked, 40) << "too few gradients large enough to mean something";
}

TEST(SparseTraining, StepsLowerTheLossAndKeepTheSparsityPattern) {
  const SparseNet pattern = random_net(32, 4, 0.0f, 11);
  const SparseInputs in = random_inputs(32, 64, 12);
  const std::vector<uint8_t> labels = random_labels(64, 13);
  SparseTrainer t(make_trainable(pattern, 10, 1), {.momentum = 0.0f});
  const double before = t.evaluate(in, labels).loss;
  for (int epoch = 0; epoch < 100; ++epoch)
    for (size_t first = 0; first < in.count(); first += 16) t.step({in, labels, first, 16}, 0.02f);
  const double after = t.evaluate(in, labels).loss;
  EXPECT_LT(after, 0.8 * before) << "before " << before;
  for (size_t l = 0; l < pattern.layers.size(); ++l) {
    EXPECT_EQ(t.model().net.layers[l].offsets, pattern.layers[l].offsets);
    EXPECT_EQ(t.model().net.layers[l].sources, pattern.layers[l].sources);
  }
}

}  // namespace
}  // namespace gossipd::trainer::sparse
