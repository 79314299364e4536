// The curves a run's evaluations make: the members' means at each progress
// (replicas), and the one model's curve where every member reads the model
// the owners update (compute groups), whose fast group does not wait for
// the slow group's evaluation of the same epoch.
#include <gtest/gtest.h>

#include "daemon/ctl/compare_entry.h"
#include "daemon/ctl/mean_curve.h"

namespace gossipd::daemon {
namespace {

proto::EpochRecord evaluated(double progress, uint64_t round, double train_seconds, double accuracy) {
  proto::EpochRecord r;
  r.set_progress(progress);
  r.set_round(round);
  r.set_train_seconds(train_seconds);
  r.set_wall_seconds(train_seconds + 0.5);
  r.set_test_accuracy(accuracy);
  r.set_bytes_sent(round * 1000);
  return r;
}

// A fast member at 2 s an epoch, a slow one at 4 s, 10 rounds an epoch.
const std::vector<std::vector<proto::EpochRecord>> kFastAndSlow{
    {evaluated(0.5, 5, 1.0, 0.70), evaluated(1.0, 10, 2.0, 0.80)},
    {evaluated(0.5, 5, 2.0, 0.72), evaluated(1.0, 10, 4.0, 0.82)},
};

TEST(ModelCurve, EveryEvaluationIsAPointInOrderOfTrainingTime) {
  const auto curve = model_curve(kFastAndSlow);
  ASSERT_EQ(curve.size(), 4u);
  std::vector<double> seconds, accuracy;
  for (const auto& p : curve) seconds.push_back(p.train_seconds), accuracy.push_back(p.test_accuracy);
  EXPECT_EQ(seconds, (std::vector<double>{1.0, 2.0, 2.0, 4.0}));
  EXPECT_EQ(accuracy, (std::vector<double>{0.70, 0.80, 0.72, 0.82}));
}

TEST(ModelCurve, APointsProgressIsWhatTheMembersHadTrainedByThenOnAverage) {
  const auto curve = model_curve(kFastAndSlow);
  // At 1 s the fast member had trained half an epoch, the slow one a quarter
  // (between nothing at 0 s and half an epoch at 2 s).
  EXPECT_DOUBLE_EQ(curve[0].progress, (0.5 + 0.25) / 2);
  EXPECT_EQ(curve[0].round, 4u);  // (5 + 2.5) / 2, rounded
  EXPECT_DOUBLE_EQ(curve[0].bytes_sent, (5000 + 2500) / 2.0);
  // After its last record a member stays at it.
  EXPECT_DOUBLE_EQ(curve[3].progress, 1.0);
  EXPECT_EQ(curve[3].round, 10u);
}

TEST(ModelCurve, TheTargetIsTheFirstEvaluationOfTheModelWhereTheMeanWaitsForTheSlowest) {
  const auto model = model_curve(kFastAndSlow);
  const auto mean = mean_curve(kFastAndSlow);
  const auto first_at = [](const std::vector<CurvePoint>& curve, double target) {
    for (const auto& p : curve)
      if (p.test_accuracy >= target) return p.train_seconds;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(first_at(model, 0.80), 2.0);  // the fast member's epoch
  EXPECT_DOUBLE_EQ(first_at(mean, 0.80), 4.0);   // (0.80 + 0.82) / 2 once the slow one got there
}

TEST(ModelCurve, WallTimeNeverGoesBackAndAMemberWithoutRecordsIsLeftOut) {
  auto workers = kFastAndSlow;
  workers[1][0].set_wall_seconds(9.0);  // its first evaluation waited long (wall) for little training
  workers.emplace_back();
  const auto curve = model_curve(workers);
  ASSERT_EQ(curve.size(), 4u);
  for (size_t i = 1; i < curve.size(); ++i) EXPECT_GE(curve[i].wall_seconds, curve[i - 1].wall_seconds);
  EXPECT_DOUBLE_EQ(curve.back().progress, 1.0);  // the mean over the two that recorded
}

TEST(ModelCurve, OnlyComputeGroupsEntriesReadOneModel) {
  EXPECT_TRUE(entry_reads_one_model("groups:4"));
  EXPECT_TRUE(entry_reads_one_model("groups"));  // a bare mode name, as gossipctl collect knows it
  EXPECT_FALSE(entry_reads_one_model("allreduce"));
  EXPECT_FALSE(entry_reads_one_model("crossover"));
  EXPECT_FALSE(entry_reads_one_model("no-such-mode"));
}

}  // namespace
}  // namespace gossipd::daemon
