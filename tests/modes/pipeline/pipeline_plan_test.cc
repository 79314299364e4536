// The pipeline planner (daemon/modes/pipeline/pipeline_plan.h) on layer timings given
// by hand: it balances the stages, merges a boundary whose transfer costs
// more than the split saves and says why, prices memory as trainer::Stage
// stashes it, and refuses more stages than layers.
#include "daemon/modes/pipeline/pipeline_plan.h"

#include <gtest/gtest.h>

#include "trainer/models.h"
#include "trainer/stage.h"

namespace gossipd::daemon {
namespace {

trainer::LayerTiming layer(double forward_ms, size_t out_floats, size_t params = 0) {
  trainer::LayerTiming l;
  l.kind = "dense";
  l.forward_s = forward_ms * 1e-3;
  l.backward_s = 2 * forward_ms * 1e-3;
  l.out_floats = out_floats;
  l.params = params;
  return l;
}

PipelinePlanInput four_layers(double bytes_per_s) {
  PipelinePlanInput in;
  in.layers = {layer(1, 100), layer(3, 100), layer(1, 100), layer(3, 10)};
  in.input_floats = 784;
  in.micro_batch = 16;
  in.micros = 8;
  in.link.latency_s = 1e-5;
  in.link.bytes_per_s = bytes_per_s;
  return in;
}

TEST(PipelinePlan, BalancesTheStages) {
  const PipelinePlan p = best_partition(four_layers(4e9), 2);
  EXPECT_EQ(topology::layer_counts(p.ranges), "2,2");  // 4 + 4 ms, not 1 + 7 or 5 + 3
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_NEAR(p.stages[0].forward_s + p.stages[0].backward_s, 12e-3, 1e-12);
  EXPECT_DOUBLE_EQ(p.stages[0].boundary_bytes, 4.0 * 100 * 16);
  EXPECT_EQ(p.stages[1].boundary_bytes, 0);
}

TEST(PipelinePlan, MergesWhereTheTransferCostsMoreThanTheSplitSaves) {
  const PipelineChoice fast = plan_pipeline(four_layers(4e9), 4);
  EXPECT_EQ(fast.plan.stages.size(), 4u);
  EXPECT_TRUE(fast.why.empty());
  // 6.4 KB a micro-batch at 100 kB/s: 64 ms a transfer, more than any stage computes.
  const PipelineChoice slow = plan_pipeline(four_layers(1e5), 4);
  EXPECT_EQ(slow.plan.stages.size(), 1u);
  EXPECT_LT(slow.plan.step_s, slow.by_count.back().step_s);
  EXPECT_NE(slow.why.find("merged to 1 stage:"), std::string::npos) << slow.why;
}

TEST(PipelinePlan, MemoryIsWhatTheStagesStash) {
  trainer::ModelOptions mo;
  mo.name = "cnn";
  mo.conv_channels = {3, 4};
  auto model = trainer::make_model(mo, 1);
  PipelinePlanInput in;
  for (const auto& l : model->layers()) {
    trainer::LayerTiming t;
    t.out_floats = l->output_shape().size();
    t.params = l->param_count();
    in.layers.push_back(t);
  }
  in.input_floats = model->input_shape().size();
  in.micro_batch = 4;
  in.micros = 8;
  in.link.bytes_per_s = 1e9;
  const topology::LayerRanges r = topology::parse_layer_counts("4,6", in.layers.size());
  const PipelinePlan p = price_partition(in, r);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(p.stages[k].stash_floats, trainer::Stage::stash_floats(*model, r.begin(k), r.end(k), 4));
    EXPECT_EQ(p.stages[k].in_flight, 2 - k);  // 1f1b: K - stage
  }
}

TEST(PipelinePlan, RefusesMoreStagesThanLayers) {
  EXPECT_THROW(plan_pipeline(four_layers(1e9), 5), std::invalid_argument);
  EXPECT_THROW(plan_pipeline(four_layers(1e9), 0), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::daemon
