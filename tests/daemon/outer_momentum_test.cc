// The outer step over exchange windows (--outer-momentum), value by value.
#include "daemon/worker/outer_momentum.h"

#include <gtest/gtest.h>

#include <vector>

namespace gossipd::daemon {
namespace {

TEST(OuterMomentum, ZeroLeavesTheExchangeAsItIs) {
  OuterMomentum outer(0.0f);
  EXPECT_FALSE(outer.on());
  std::vector<float> x{1.0f, 2.0f};
  outer.restart(x);
  x = {0.5f, 3.0f};
  outer.step(x);
  EXPECT_EQ(x, (std::vector<float>{0.5f, 3.0f}));
}

// Nesterov with outer learning rate 1: Δ = x0 − x, m ← M m + Δ, x ← x0 −
// (Δ + M m). Two windows that each move the parameters by −1 from their start.
TEST(OuterMomentum, NesterovOnEachWindowsChange) {
  OuterMomentum outer(0.5f);
  std::vector<float> x{10.0f};
  outer.restart(x);
  x = {9.0f};  // Δ = 1, m = 1, x = 10 − (1 + 0.5) = 8.5
  outer.step(x);
  EXPECT_FLOAT_EQ(x[0], 8.5f);
  x = {7.5f};  // from 8.5: Δ = 1, m = 0.5 + 1 = 1.5, x = 8.5 − (1 + 0.75) = 6.75
  outer.step(x);
  EXPECT_FLOAT_EQ(x[0], 6.75f);
  outer.restart(x);  // a resync: the momentum starts again
  x = {5.75f};
  outer.step(x);
  EXPECT_FLOAT_EQ(x[0], 6.75f - 1.5f);
}

TEST(OuterMomentum, BadValuesAreOneLine) {
  EXPECT_THROW(check_outer_momentum(1.0f, 4), std::exception);
  EXPECT_THROW(check_outer_momentum(-0.1f, 4), std::exception);
  EXPECT_THROW(check_outer_momentum(0.5f, 1), std::exception);
  EXPECT_NO_THROW(check_outer_momentum(0.0f, 1));
  EXPECT_NO_THROW(check_outer_momentum(0.9f, 4));
}

}  // namespace
}  // namespace gossipd::daemon
