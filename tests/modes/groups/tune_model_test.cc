// gossipctl tune's model: the goal on a curve, hardware and statistical
// efficiency, and the cold start's probes with Omnivore's pruning, in the
// order that probes every g before probing any g again.
#include "daemon/modes/groups/tune_model.h"

#include <gtest/gtest.h>

namespace gossipd::daemon {
namespace {

CurvePoint at(uint64_t round, double train_seconds, double accuracy, double loss) {
  CurvePoint p;
  p.round = round;
  p.train_seconds = train_seconds;
  p.test_accuracy = accuracy;
  p.test_loss = loss;
  return p;
}

const std::vector<CurvePoint> kCurve{at(100, 1.0, 0.70, 0.80), at(200, 2.0, 0.80, 0.60),
                                     at(300, 3.5, 0.84, 0.50)};

TEST(TuneModel, TheGoalIsInterpolatedBetweenTheEvaluationsAroundIt) {
  const auto acc = goal_point(kCurve, TuneGoal{false, 0.82});
  ASSERT_TRUE(acc.has_value());
  EXPECT_NEAR(acc->steps, 250, 1e-9);  // halfway from 0.80 to 0.84
  EXPECT_NEAR(acc->train_seconds, 2.75, 1e-12);
  const auto loss = goal_point(kCurve, TuneGoal{true, 0.65});
  ASSERT_TRUE(loss.has_value());
  EXPECT_NEAR(loss->steps, 175, 1e-9);  // a quarter of the way from 0.80 down to 0.60
}

TEST(TuneModel, AGoalAtTheFirstEvaluationIsThatEvaluationAndAnUnreachedOneIsNone) {
  const auto first = goal_point(kCurve, TuneGoal{false, 0.5});
  ASSERT_TRUE(first.has_value());
  EXPECT_DOUBLE_EQ(first->steps, 100);
  EXPECT_FALSE(goal_point(kCurve, TuneGoal{false, 0.85}).has_value());
  EXPECT_FALSE(goal_point(kCurve, TuneGoal{true, 0.4}).has_value());
  EXPECT_FALSE(goal_point({}, TuneGoal{true, 0.4}).has_value());
}

TEST(TuneModel, ThePredictionIsSecondsPerStepTimesStepsToTheGoal) {
  EXPECT_DOUBLE_EQ(seconds_per_step(kCurve), 3.5 / 300);
  EXPECT_NEAR(*predicted_seconds(kCurve, TuneGoal{false, 0.82}), 250 * 3.5 / 300, 1e-9);
  EXPECT_FALSE(predicted_seconds(kCurve, TuneGoal{false, 0.9}).has_value());
  EXPECT_EQ(seconds_per_step({}), 0);
}

TEST(TuneModel, TheColdStartProbesEveryLearningRateAtTheGivenMomentum) {
  const auto probes = first_probes(1, {0.2, 0.05}, 0.9);
  ASSERT_EQ(probes.size(), 2u);
  EXPECT_EQ(probes[0].name(), "g1 lr 0.2 m 0.9");
  EXPECT_EQ(probes[1].name(), "g1 lr 0.05 m 0.9");
}

TEST(TuneModel, LargerGroupCountsProbeNoMomentumAboveThePreviousBest) {
  const auto probes = next_probes(4, TuneConfig{2, 0.05, 0.6}, {0.0, 0.9, 0.6, 0.3});
  std::vector<std::string> names;
  for (const auto& p : probes) names.push_back(p.name());
  EXPECT_EQ(names, (std::vector<std::string>{"g4 lr 0.05 m 0.6", "g4 lr 0.05 m 0.3", "g4 lr 0.05 m 0",
                                             "g4 lr 0.005 m 0.6", "g4 lr 0.005 m 0.3", "g4 lr 0.005 m 0"}));
}

// Runs next_probe to the end, each probe's "best of its g" the first of that
// g that ran (a stand-in for the least prediction); the names in order.
std::vector<std::string> probe_order(const std::vector<size_t>& groups, std::vector<TuneConfig> done = {}) {
  const BestOf first_of = [&done](size_t g) -> std::optional<TuneConfig> {
    for (const auto& c : done) {
      if (c.groups == g) return c;
    }
    return std::nullopt;
  };
  std::vector<std::string> names;
  while (const auto c = next_probe(groups, {0.1, 0.01}, {0.9, 0.5}, done, first_of)) {
    names.push_back(c->name());
    done.push_back(*c);
  }
  return names;
}

TEST(TuneModel, EveryGroupCountIsProbedOnceBeforeAnyIsProbedAgain) {
  EXPECT_EQ(probe_order({1, 2, 4}),
            (std::vector<std::string>{"g1 lr 0.1 m 0.9", "g1 lr 0.01 m 0.9",  // cold start
                                      "g2 lr 0.1 m 0.9", "g4 lr 0.1 m 0.9",   // one of each g
                                      "g2 lr 0.1 m 0.5", "g2 lr 0.01 m 0.9", "g2 lr 0.01 m 0.5",  // the rest
                                      "g4 lr 0.1 m 0.5", "g4 lr 0.01 m 0.9", "g4 lr 0.01 m 0.5"}));
}

TEST(TuneModel, ALargerGroupCountFollowsTheBestOfTheOneBeforeIt) {
  // g1's best lr 0.1 m 0.9, g2's so far lr 0.01 m 0.5: g4's first probe is
  // g2's best, none of g4's above momentum 0.5.
  const BestOf best = [](size_t g) -> std::optional<TuneConfig> {
    if (g == 1) return TuneConfig{1, 0.1, 0.9};
    if (g == 2) return TuneConfig{2, 0.01, 0.5};
    return std::nullopt;
  };
  const std::vector<TuneConfig> done{{1, 0.1, 0.9}, {1, 0.01, 0.9}, {2, 0.1, 0.9}};
  const auto c = next_probe({1, 2, 4}, {0.1, 0.01}, {0.9, 0.5}, done, best);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->name(), "g4 lr 0.01 m 0.5");
}

TEST(TuneModel, AnEmptyGridHasNoProbe) {
  const BestOf none = [](size_t) { return std::nullopt; };
  EXPECT_FALSE(next_probe({}, {0.1}, {0.9}, {}, none));
  EXPECT_FALSE(next_probe({1}, {}, {0.9}, {}, none));
}

}  // namespace
}  // namespace gossipd::daemon
