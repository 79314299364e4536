#include "trainer/optimizer.h"

#include <gtest/gtest.h>

#include <vector>

namespace gossipd::trainer {
namespace {

std::vector<ParamSegment> one_segment(size_t n) { return {{"all", 0, n}}; }

TEST(Optimizer, PlainSgdWithWeightDecay) {
  Optimizer opt({OptimizerKind::kSgd, 0.0f, false, 0.1f}, one_segment(1), 1);
  std::vector<float> w{1.0f}, g{0.5f};
  opt.step(w, g, 0.1f);
  EXPECT_FLOAT_EQ(w[0], 0.94f);  // 1 - 0.1 * (0.5 + 0.1 * 1)
  EXPECT_EQ(opt.name(), "sgd");
}

TEST(Optimizer, MomentumTwoSteps) {
  Optimizer opt({OptimizerKind::kSgd, 0.9f, false, 0.1f}, one_segment(1), 1);
  std::vector<float> w{1.0f}, g{0.5f};
  opt.step(w, g, 0.1f);
  EXPECT_FLOAT_EQ(w[0], 0.94f);  // v = 0.6
  opt.step(w, g, 0.1f);
  EXPECT_FLOAT_EQ(opt.state()[0], 1.134f);  // 0.9 * 0.6 + 0.5 + 0.1 * 0.94
  EXPECT_FLOAT_EQ(w[0], 0.8266f);
  EXPECT_EQ(opt.name(), "momentum");
}

TEST(Optimizer, NesterovStep) {
  Optimizer opt({OptimizerKind::kSgd, 0.9f, true, 0.1f}, one_segment(1), 1);
  std::vector<float> w{1.0f}, g{0.5f};
  opt.step(w, g, 0.1f);
  EXPECT_FLOAT_EQ(w[0], 0.886f);  // g' = 0.6, v = 0.6, w -= 0.1 * (0.6 + 0.54)
  EXPECT_EQ(opt.name(), "nesterov");
}

TEST(Optimizer, LarsScalesEachSegmentByItsTrustRatio) {
  OptimizerOptions o;
  o.kind = OptimizerKind::kLars;
  o.momentum = 0.0f;
  o.lars_eta = 0.001f;
  Optimizer opt(o, {{"a", 0, 2}, {"b", 2, 2}}, 4);
  std::vector<float> w{3, 4, 1, 0};
  std::vector<float> g{0.6f, 0.8f, 0.0f, 2.0f};
  opt.step(w, g, 1.0f);
  // a: local = 0.001 * 5 / 1 = 0.005; b: local = 0.001 * 1 / 2 = 0.0005
  EXPECT_FLOAT_EQ(w[0], 3 - 0.005f * 0.6f);
  EXPECT_FLOAT_EQ(w[1], 4 - 0.005f * 0.8f);
  EXPECT_FLOAT_EQ(w[2], 1.0f);
  EXPECT_FLOAT_EQ(w[3], -0.0005f * 2.0f);
  EXPECT_EQ(opt.name(), "lars");
}

TEST(Optimizer, RejectsBadSettingsAndSizes) {
  EXPECT_THROW(Optimizer({OptimizerKind::kSgd, 1.0f}, one_segment(1), 1), std::invalid_argument);
  EXPECT_THROW(Optimizer({OptimizerKind::kSgd, 0.5f, false, -1.0f}, one_segment(1), 1),
               std::invalid_argument);
  EXPECT_THROW(Optimizer({OptimizerKind::kSgd, 0.0f, true}, one_segment(1), 1), std::invalid_argument);
  Optimizer opt({}, one_segment(2), 2);
  std::vector<float> w(3), g(3);
  EXPECT_THROW(opt.step(w, g, 0.1f), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::trainer
