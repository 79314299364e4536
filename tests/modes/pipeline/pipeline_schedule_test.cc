// Pipeline schedules (pipeline_schedule.h) and their timing
// (pipeline_timing.h): every schedule runs each micro-batch's
// forward then its backward once, backwards in micro-batch order (zb's W
// after its B, in order too); 1f1b holds at most K - stage micro-batches,
// gpipe all M, zb one more than 1f1b; zb keeps a slower first stage
// busy; the schedules never
// deadlock across stages, and GPipe's bubble is (K-1)/(M+K-1).
#include "daemon/modes/pipeline/pipeline_schedule.h"

#include <gtest/gtest.h>

#include "daemon/modes/pipeline/pipeline_timing.h"

namespace gossipd::topology {
namespace {

constexpr PipelineSchedule kAll[] = {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
                                     PipelineSchedule::kOneFOneBAsync, PipelineSchedule::kZeroBubble};

TEST(PipelineSchedule, EveryMicroBatchRunsForwardThenBackwardOnceBackwardsInOrder) {
  for (PipelineSchedule s : kAll) {
    for (size_t k = 1; k <= 5; ++k) {
      for (size_t m = 1; m <= 9; ++m) {
        for (size_t stage = 0; stage < k; ++stage) {
          const std::vector<PipelineOp> ops = pipeline_ops(s, k, m, stage);
          // zb splits every backward but the first stage's in two.
          const bool split = s == PipelineSchedule::kZeroBubble && stage > 0;
          ASSERT_EQ(ops.size(), (split ? 3 : 2) * m);
          std::vector<int> forwarded(m, 0);
          uint64_t next_backward = 0, next_weights = 0;
          for (const PipelineOp& op : ops) {
            ASSERT_LT(op.micro, m);
            if (op.kind == PipelineOp::kForward) {
              ++forwarded[op.micro];
            } else if (op.kind == PipelineOp::kBackwardWeights) {
              EXPECT_LT(op.micro, next_backward);  // after its input's gradient
              EXPECT_EQ(op.micro, next_weights++);
            } else {
              EXPECT_EQ(op.kind == PipelineOp::kBackwardInput, split);
              EXPECT_EQ(forwarded[op.micro], 1) << schedule_name(s) << " K=" << k << " M=" << m;
              EXPECT_EQ(op.micro, next_backward++);
            }
          }
          EXPECT_EQ(next_backward, m);
          EXPECT_EQ(next_weights, split ? m : 0);
          for (int f : forwarded) EXPECT_EQ(f, 1);
        }
      }
    }
  }
}

TEST(PipelineSchedule, OneFOneBHoldsAtMostKMinusStageGpipeAllM) {
  for (size_t k = 1; k <= 5; ++k) {
    for (size_t m = 1; m <= 9; ++m) {
      for (size_t stage = 0; stage < k; ++stage) {
        EXPECT_EQ(max_in_flight(pipeline_ops(PipelineSchedule::kGpipe, k, m, stage)), m);
        EXPECT_EQ(max_in_flight(pipeline_ops(PipelineSchedule::kOneFOneB, k, m, stage)),
                  std::min(k - stage, m));
      }
    }
  }
}

TEST(PipelineSchedule, ZeroBubbleHoldsOneMicroBatchMoreThanOneFOneB) {
  for (size_t k = 2; k <= 5; ++k) {
    for (size_t m = 1; m <= 9; ++m) {
      for (size_t stage = 0; stage < k; ++stage) {
        const size_t held = std::min(k - stage + 1, m);
        EXPECT_EQ(max_in_flight(pipeline_ops(PipelineSchedule::kZeroBubble, k, m, stage)), held)
            << "K=" << k << " M=" << m << " stage " << stage;
      }
    }
  }
  using P = PipelineOp;
  const std::vector<PipelineOp> first{{P::kForward, 0},  {P::kForward, 1}, {P::kForward, 2},
                                      {P::kBackward, 0}, {P::kForward, 3}, {P::kBackward, 1},
                                      {P::kBackward, 2}, {P::kBackward, 3}};
  EXPECT_EQ(pipeline_ops(PipelineSchedule::kZeroBubble, 2, 4, 0), first);
  const std::vector<PipelineOp> last{
      {P::kForward, 0},         {P::kBackwardInput, 0}, {P::kForward, 1},         {P::kBackwardInput, 1},
      {P::kBackwardWeights, 0}, {P::kForward, 2},       {P::kBackwardInput, 2},   {P::kBackwardWeights, 1},
      {P::kForward, 3},         {P::kBackwardInput, 3}, {P::kBackwardWeights, 2}, {P::kBackwardWeights, 3}};
  EXPECT_EQ(pipeline_ops(PipelineSchedule::kZeroBubble, 2, 4, 1), last);
}

TEST(PipelineSchedule, OneFOneBAlternatesInTheSteadyState) {
  const std::vector<PipelineOp> ops = pipeline_ops(PipelineSchedule::kOneFOneB, 4, 8, 1);
  using P = PipelineOp;
  const std::vector<PipelineOp> expected{
      {P::kForward, 0}, {P::kForward, 1},  {P::kForward, 2},  {P::kBackward, 0},
      {P::kForward, 3}, {P::kBackward, 1}, {P::kForward, 4},  {P::kBackward, 2},
      {P::kForward, 5}, {P::kBackward, 3}, {P::kForward, 6},  {P::kBackward, 4},
      {P::kForward, 7}, {P::kBackward, 5}, {P::kBackward, 6}, {P::kBackward, 7}};
  EXPECT_EQ(ops, expected);
}

StageTimes equal_stages(size_t k, double forward, double backward, double transfer) {
  StageTimes t;
  t.forward.assign(k, forward);
  t.backward.assign(k, backward);
  t.to_next.assign(k - 1, transfer);
  t.to_prev.assign(k - 1, transfer);
  t.update.assign(k, 0.0);
  return t;
}

TEST(PipelineTiming, NoScheduleDeadlocks) {
  for (PipelineSchedule s : kAll) {
    for (size_t k = 1; k <= 6; ++k) {
      for (size_t m = 1; m <= 12; ++m) {
        EXPECT_TRUE(simulate_pipeline(s, m, equal_stages(k, 1.0, 2.0, 0.3)).has_value())
            << schedule_name(s) << " K=" << k << " M=" << m;
      }
    }
  }
}

TEST(PipelineTiming, GpipeBubbleIsKMinusOneOverMPlusKMinusOne) {
  for (size_t k = 1; k <= 6; ++k) {
    for (size_t m = 1; m <= 12; ++m) {
      for (PipelineSchedule s : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
        const auto timing = simulate_pipeline(s, m, equal_stages(k, 1.0, 1.0, 0.0));
        ASSERT_TRUE(timing);
        EXPECT_DOUBLE_EQ(timing->step, 2.0 * static_cast<double>(m + k - 1));
        for (double b : timing->bubble) EXPECT_NEAR(b, gpipe_bubble(k, m), 1e-12);
      }
    }
  }
}

// Stage 0 is the slower (1 + 2 a micro-batch against 0.8 + 1.6, 0.8 of it
// W): 1f1b's stage 0 waits for stage 1's first whole backward and, at the
// end, for its last; zb's waits for neither, its step is stage 0's compute.
TEST(PipelineTiming, ZeroBubbleKeepsTheSlowerFirstStageBusy) {
  StageTimes t = equal_stages(2, 1.0, 2.0, 0.0);
  t.forward[1] = 0.8;
  t.backward[1] = 1.6;
  t.weights = {0.0, 0.8};
  const auto zb = simulate_pipeline(PipelineSchedule::kZeroBubble, 4, t);
  const auto one = simulate_pipeline(PipelineSchedule::kOneFOneB, 4, t);
  ASSERT_TRUE(zb && one);
  EXPECT_DOUBLE_EQ(zb->step, 4 * 3.0);
  EXPECT_DOUBLE_EQ(zb->bubble[0], 0.0);
  EXPECT_GT(one->step, zb->step + 1.0);
  // Without W to defer zb still gains the warm-up forward, less than with it.
  t.weights.clear();
  const auto whole = simulate_pipeline(PipelineSchedule::kZeroBubble, 4, t);
  ASSERT_TRUE(whole);
  EXPECT_GT(whole->step, zb->step);
}

TEST(PipelineTiming, TheSlowestStageAndTheTransfersSetTheStep) {
  StageTimes t = equal_stages(2, 1.0, 2.0, 0.5);
  t.forward[1] = 3.0;  // stage 1: 3 + 2 per micro-batch, stage 0: 1 + 2
  const auto timing = simulate_pipeline(PipelineSchedule::kGpipe, 4, t);
  ASSERT_TRUE(timing);
  // Stage 1 starts after F0 at stage 0 (1) and its transfer (0.5), runs 4
  // forwards (12) and 4 backwards (8); stage 0's last backward follows B3
  // at stage 1 (21.5) by the transfer (0.5) and its own 2.
  EXPECT_DOUBLE_EQ(timing->step, 24.0);
}

// One stage: under gpipe (backwards in micro-batch order, B0 after F3) no
// backward finds its layers' state; under 1f1b (K = 1) every backward
// follows its own forward.
TEST(PipelineTiming, BackwardsAfterAnotherForwardPayToFindTheirStateAgain) {
  StageTimes t = equal_stages(1, 1.0, 2.0, 0.0);
  t.refind = {0.25};
  const auto gpipe = simulate_pipeline(PipelineSchedule::kGpipe, 4, t);
  const auto one_f_one_b = simulate_pipeline(PipelineSchedule::kOneFOneB, 4, t);
  ASSERT_TRUE(gpipe && one_f_one_b);
  EXPECT_DOUBLE_EQ(gpipe->step, 4 * 3.0 + 4 * 0.25);
  EXPECT_DOUBLE_EQ(gpipe->bubble[0], 0.0);
  EXPECT_DOUBLE_EQ(one_f_one_b->step, 4 * 3.0);
}

// A convolution's state (its im2col) is its W's to make again under zb, not
// its B's: at the last stage each W runs after the next micro-batch's
// forward, so every W pays it, and no B does (each follows its forward).
// A whole backward pays the same whichever layers hold the state.
TEST(PipelineTiming, UnderZbTheSplitLayersStateIsFoundAgainByTheirWNotTheirB) {
  StageTimes t = equal_stages(2, 1.0, 2.0, 0.0);
  t.weights = {1.0, 1.0};
  t.refind = {0.25, 0.25};
  StageTimes split = t;
  split.refind_weights = {0.25, 0.25};
  const auto in_b = simulate_pipeline(PipelineSchedule::kZeroBubble, 4, t);
  const auto in_w = simulate_pipeline(PipelineSchedule::kZeroBubble, 4, split);
  ASSERT_TRUE(in_b && in_w);
  EXPECT_DOUBLE_EQ(in_b->busy[1], 4 * 3.0) << "each B follows its own forward";
  EXPECT_DOUBLE_EQ(in_w->busy[1], 4 * 3.0 + 4 * 0.25) << "each W follows another micro-batch's forward";
  for (PipelineSchedule s : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB}) {
    const auto a = simulate_pipeline(s, 4, t), b = simulate_pipeline(s, 4, split);
    ASSERT_TRUE(a && b);
    EXPECT_DOUBLE_EQ(a->step, b->step) << static_cast<int>(s);
    EXPECT_EQ(a->busy, b->busy) << static_cast<int>(s);
  }
}

TEST(PipelineSchedule, DefaultMicroBatchesHoldAboutEightSamplesAndDivideTheBatch) {
  for (const auto& [batch, micros] : std::vector<std::pair<size_t, size_t>>{
           {64, 8}, {128, 16}, {32, 4}, {100, 10}, {8, 1}, {7, 1}, {16, 2}, {1, 1}}) {
    EXPECT_EQ(default_micro_batches(batch), micros) << batch;
    EXPECT_EQ(batch % default_micro_batches(batch), 0u);
  }
  EXPECT_EQ(micro_batches_for(64, 4), 4u);
  EXPECT_EQ(micro_batches_for(64, 0), 8u);
}

TEST(LayerCounts, ParsesAndRefusesWithAReason) {
  const LayerRanges r = parse_layer_counts("2,3,4", 9);
  EXPECT_EQ(r.stages(), 3u);
  EXPECT_EQ(r.begin(1), 2u);
  EXPECT_EQ(r.end(2), 9u);
  EXPECT_EQ(layer_counts(r), "2,3,4");
  for (const char* bad : {"", "2,,3", "2,0,7", "a,3", "2,3,", "-1,10"}) {
    EXPECT_THROW(parse_layer_counts(bad, 9), std::invalid_argument) << bad;
  }
  // Counts whose sum wraps around to the model's layers (found by fuzz_partition_text).
  try {
    parse_layer_counts("3,8,18446744073709551614", 9);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("covers more than the model's 9 layers"), std::string::npos)
        << e.what();
  }
  try {
    parse_layer_counts("2,3", 9);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("covers 5 layers, the model has 9"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_schedule("1f1b-async"), PipelineSchedule::kOneFOneBAsync);
  EXPECT_EQ(parse_schedule("zb"), PipelineSchedule::kZeroBubble);
  EXPECT_THROW(parse_schedule("pipedream"), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::topology
