// Finite-difference checks of every layer's backward pass and of both models.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "trainer/conv2d.h"
#include "trainer/dense.h"
#include "trainer/elementwise.h"
#include "trainer/loss.h"
#include "trainer/max_pool.h"
#include "trainer/models.h"

namespace gossipd::trainer {
namespace {

// L = sum(out * r) for fixed random r, so dL/dout = r.
struct Probe {
  Layer& layer;
  Shape in_shape;
  int batch;
  std::vector<float> x, r, out, params, grads;

  Probe(Layer& l, Shape in, int b, Rng& rng) : layer(l), in_shape(in), batch(b) {
    x.resize(in.size() * b);
    for (auto& v : x) v = static_cast<float>(rng.normal());
    out.resize(l.output_shape().size() * b);
    r.resize(out.size());
    for (auto& v : r) v = static_cast<float>(rng.normal());
    params.resize(l.param_count());
    grads.resize(l.param_count());
    l.bind(params, grads);
    l.init_params(rng);
    for (auto& p : params) p += static_cast<float>(0.1 * rng.normal());  // non-zero biases too
  }

  double loss() {
    layer.forward(x.data(), out.data(), batch);
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * r[i];
    return s;
  }

  // Checks analytic vs central differences for every input and parameter.
  void check(double eps, double tol) {
    loss();
    std::vector<float> dx(x.size());
    layer.backward(x.data(), out.data(), r.data(), dx.data(), batch);
    const std::vector<float> dparams = grads;
    compare("input", x, dx, eps, tol);
    compare("param", params, dparams, eps, tol);
  }

  void compare(const char* what, std::vector<float>& v, const std::vector<float>& analytic, double eps,
               double tol) {
    for (size_t i = 0; i < v.size(); ++i) {
      const float saved = v[i];
      v[i] = saved + static_cast<float>(eps);
      const double up = loss();
      v[i] = saved - static_cast<float>(eps);
      const double down = loss();
      v[i] = saved;
      const double numeric = (up - down) / (2 * eps);
      ASSERT_NEAR(analytic[i], numeric, tol * std::max(1.0, std::abs(numeric)))
          << layer.kind() << " " << what << " " << i;
    }
  }
};

TEST(Gradient, Dense) {
  Rng rng(1);
  Dense d(7, 5);
  Probe(d, {1, 1, 7}, 3, rng).check(1e-2, 2e-3);
}

TEST(Gradient, ReLUAwayFromTheKink) {
  Rng rng(2);
  ReLU relu(Shape{1, 1, 10});
  Probe p(relu, {1, 1, 10}, 4, rng);
  for (auto& v : p.x) v = v >= 0 ? v + 0.1f : v - 0.1f;
  p.check(1e-2, 1e-3);
}

TEST(Gradient, Flatten) {
  Rng rng(3);
  Flatten f(Shape{2, 3, 2});
  Probe(f, {2, 3, 2}, 2, rng).check(1e-2, 1e-3);
}

TEST(Gradient, Conv2DSamePadding) {
  Rng rng(4);
  Conv2D c(Shape{5, 4, 3}, 4, 3, 1, 1);
  EXPECT_EQ(c.output_shape(), (Shape{5, 4, 4}));
  Probe(c, {5, 4, 3}, 2, rng).check(1e-2, 2e-3);
}

// A slice of an image with its halo rows in the input: padded by columns only.
TEST(Gradient, Conv2DPaddedByColumnsOnly) {
  Rng rng(6);
  Conv2D c(Shape{5, 4, 3}, 4, 3, 1, Conv2D::Padding{0, 1});
  EXPECT_EQ(c.output_shape(), (Shape{3, 4, 4}));
  Probe(c, {5, 4, 3}, 2, rng).check(1e-2, 2e-3);
}

TEST(Gradient, Conv2DStridedNoPadding) {
  Rng rng(5);
  Conv2D c(Shape{7, 7, 2}, 3, 3, 2, 0);
  EXPECT_EQ(c.output_shape(), (Shape{3, 3, 3}));
  Probe(c, {7, 7, 2}, 2, rng).check(1e-2, 2e-3);
}

TEST(Gradient, MaxPoolWithDistinctValues) {
  Rng rng(6);
  MaxPool2D m(Shape{4, 6, 3}, 2);
  Probe p(m, {4, 6, 3}, 2, rng);
  // Values 0.1 apart so a 1e-2 step never changes the argmax.
  for (size_t i = 0; i < p.x.size(); ++i) p.x[i] = 0.1f * static_cast<float>((i * 37) % p.x.size());
  p.check(1e-2, 1e-3);
}

// Equal maxima: the gradient goes to the window's first (row-major) one; a
// NaN never wins against a number after it, so the first element keeps it.
TEST(Gradient, MaxPoolTiesGoToTheFirstMaximum) {
  MaxPool2D m(Shape{2, 2, 2}, 2);
  const float nan = std::nanf("");
  // Channel 0: 1, 3, 3, 2 (tie at positions 1 and 2). Channel 1: NaN, 5, 4, 5.
  const std::vector<float> x{1, nan, 3, 5, 3, 4, 2, 5};
  std::vector<float> y(2), dy{10, 20}, dx(8, -1);
  m.forward(x.data(), y.data(), 1);
  EXPECT_EQ(y[0], 3.0f);
  m.backward(x.data(), y.data(), dy.data(), dx.data(), 1);
  EXPECT_EQ(dx, (std::vector<float>{0, 20, 10, 0, 0, 0, 0, 0}));
}

void check_loss(float smoothing) {
  Rng rng(7);
  const int classes = 6, batch = 4;
  SoftmaxCrossEntropy loss(classes, smoothing);
  std::vector<float> z(classes * batch), dz(z.size());
  for (auto& v : z) v = static_cast<float>(2 * rng.normal());
  std::vector<uint8_t> labels{0, 5, 3, 3};
  loss.compute(z.data(), labels, dz);
  const float eps = 1e-2f;
  for (size_t i = 0; i < z.size(); ++i) {
    const float saved = z[i];
    z[i] = saved + eps;
    const double up = loss.compute(z.data(), labels, {}).loss;
    z[i] = saved - eps;
    const double down = loss.compute(z.data(), labels, {}).loss;
    z[i] = saved;
    EXPECT_NEAR(dz[i], (up - down) / (2 * eps), 2e-4) << "logit " << i;
  }
}

TEST(Gradient, SoftmaxCrossEntropy) { check_loss(0.0f); }
TEST(Gradient, SoftmaxCrossEntropyWithLabelSmoothing) { check_loss(0.1f); }

TEST(Loss, ValuesAndAccuracy) {
  SoftmaxCrossEntropy loss(3);
  std::vector<float> z{0, 0, 0, 5, 1, 0};
  std::vector<uint8_t> labels{1, 0};
  LossResult r = loss.compute(z.data(), labels, {});
  EXPECT_NEAR(r.loss, (std::log(3.0) + std::log(1 + std::exp(-4.0) + std::exp(-5.0))) / 2, 1e-6);
  EXPECT_EQ(r.correct, 1);  // row 0 ties pick class 0 (wrong), row 1 is right
  EXPECT_THROW(SoftmaxCrossEntropy(3, 1.0f), std::invalid_argument);
}

void check_model(ModelOptions options, int batch) {
  auto m = make_model(options, 11);
  Rng rng(12);
  const size_t in = m->input_shape().size();
  std::vector<float> x(in * batch);
  for (auto& v : x) v = static_cast<float>(rng.normal());
  std::vector<uint8_t> labels(batch);
  for (auto& l : labels) l = static_cast<uint8_t>(rng.below(m->classes()));
  SoftmaxCrossEntropy loss(m->classes());
  std::vector<float> dz(static_cast<size_t>(batch) * m->classes());
  loss.compute(m->forward(x.data(), batch), labels, dz);
  m->backward(x.data(), dz.data(), batch);
  const std::vector<float> analytic(m->grads().begin(), m->grads().end());

  auto params = m->params();
  const float eps = 1e-3f;
  int checked = 0, bad = 0;
  for (size_t i = 0; i < params.size(); i += 3) {
    const float saved = params[i];
    params[i] = saved + eps;
    const double up = loss.compute(m->forward(x.data(), batch), labels, {}).loss;
    params[i] = saved - eps;
    const double down = loss.compute(m->forward(x.data(), batch), labels, {}).loss;
    params[i] = saved;
    const double numeric = (up - down) / (2 * eps);
    ++checked;
    if (std::abs(analytic[i] - numeric) > 2e-3 + 2e-2 * std::abs(numeric)) ++bad;
  }
  // A step may cross a ReLU/max kink for a handful of parameters; the rest must agree.
  EXPECT_GT(checked, 50);
  EXPECT_LE(bad, checked / 100) << bad << " of " << checked << " parameters disagree";
}

TEST(Gradient, MlpModel) {
  ModelOptions o;
  o.name = "mlp";
  o.input = {4, 4, 1};
  o.hidden = {12, 8};
  o.classes = 5;
  check_model(o, 6);
}

TEST(Gradient, CnnModel) {
  ModelOptions o;
  o.name = "cnn";
  o.input = {8, 8, 1};
  o.conv_channels = {3, 4};
  o.hidden = {10};
  o.classes = 4;
  check_model(o, 3);
}

TEST(Model, SegmentTableTilesTheParameterBuffer) {
  for (std::string name : {"mlp", "cnn"}) {
    ModelOptions o;
    o.name = name;
    auto m = make_model(o, 1);
    size_t next = 0;
    for (const auto& s : m->segments()) {
      EXPECT_EQ(s.offset, next) << s.name;
      EXPECT_GT(s.length, 0u);
      next += s.length;
    }
    EXPECT_EQ(next, m->params().size());
    EXPECT_EQ(m->grads().size(), m->params().size());
  }
  ModelOptions mlp;
  auto m = make_model(mlp, 1);
  ASSERT_EQ(m->segments().size(), 3u);
  EXPECT_EQ(m->segments()[0].name, "dense1");
  EXPECT_EQ(m->segments()[0].length, 784u * 256 + 256);
  EXPECT_EQ(m->params().size(), 784u * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  ModelOptions cnn;
  cnn.name = "cnn";
  auto c = make_model(cnn, 1);
  ASSERT_EQ(c->segments().size(), 4u);
  EXPECT_EQ(c->segments()[0].name, "conv1");
  EXPECT_EQ(c->segments()[1].length, 64u * 3 * 3 * 32 + 64);
  ModelOptions bad;
  bad.name = "resnet";
  EXPECT_THROW(make_model(bad, 1), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::trainer
