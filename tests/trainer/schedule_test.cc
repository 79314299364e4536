#include <gtest/gtest.h>

#include "trainer/lr_schedule.h"

namespace gossipd::trainer {
namespace {

TEST(Schedule, LinearWarmupThenCosine) {
  ScheduleOptions o;
  o.base_lr = 1.0f;
  o.warmup_epochs = 2;
  o.warmup_start = 0.0f;
  o.total_epochs = 12;
  LrSchedule s(o);
  EXPECT_FLOAT_EQ(s.at(0), 0.0f);
  EXPECT_FLOAT_EQ(s.at(1), 0.5f);
  EXPECT_FLOAT_EQ(s.at(2), 1.0f);
  EXPECT_NEAR(s.at(7), 0.5f, 1e-6);  // halfway through the cosine
  EXPECT_NEAR(s.at(12), 0.0f, 1e-6);
  EXPECT_NEAR(s.at(20), 0.0f, 1e-6);
}

TEST(Schedule, StepPolyConstant) {
  ScheduleOptions o;
  o.base_lr = 0.8f;
  o.total_epochs = 10;
  o.decay = Decay::kStep;
  o.step_epochs = {6, 3};
  o.gamma = 0.5f;
  LrSchedule step(o);
  EXPECT_FLOAT_EQ(step.at(2.9), 0.8f);
  EXPECT_FLOAT_EQ(step.at(3), 0.4f);
  EXPECT_FLOAT_EQ(step.at(6.5), 0.2f);
  o.decay = Decay::kPoly;
  o.power = 2;
  LrSchedule poly(o);
  EXPECT_NEAR(poly.at(5), 0.2f, 1e-6);  // 0.8 * 0.5^2
  o.decay = Decay::kConstant;
  EXPECT_FLOAT_EQ(LrSchedule(o).at(9), 0.8f);
}

TEST(Schedule, ParsesNamesAndRejectsBadValues) {
  EXPECT_EQ(parse_decay("cosine"), Decay::kCosine);
  EXPECT_EQ(parse_decay("poly"), Decay::kPoly);
  EXPECT_THROW(parse_decay("exp"), std::invalid_argument);
  ScheduleOptions o;
  o.base_lr = -0.1f;
  EXPECT_THROW(LrSchedule{o}, std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::trainer
