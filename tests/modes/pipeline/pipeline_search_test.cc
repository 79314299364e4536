// The whole-plan search (daemon/modes/pipeline/pipeline_search.h) on layer profiles
// given by hand, and the profile's cache (daemon/plan/layer_profile.h): it
// considers every shape, micro-batch count and schedule, prices each at its
// own micro-batch size, keeps to what the flags fix, and the cache is
// re-profiled, saying why, when it is another machine's or model's.
#include "daemon/modes/pipeline/pipeline_search.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/temp_dir.h"
#include "trainer/models.h"

namespace gossipd::daemon {
namespace {

using topology::PipelineSchedule;

// Four dense layers of `params` each whose time per sample is `per_sample_ms`
// at a micro-batch of 64 and twice that at 1 (a small product is memory
// bound), forward; backward twice the forward.
LayerProfile profile_of(size_t params, double per_sample_ms) {
  LayerProfile p;
  p.input_floats = 100;
  p.update_s_per_param = 1e-9;
  p.copy_s_per_param = 2e-10;
  for (size_t b : {1, 64}) {
    p.sizes.push_back(b);
    p.at.emplace_back();
    for (int i = 0; i < 4; ++i) {
      trainer::LayerTiming t;
      t.kind = "dense";
      t.forward_s = per_sample_ms * 1e-3 * static_cast<double>(b) * (b == 1 ? 2.0 : 1.0);
      t.backward_s = 2 * t.forward_s;
      t.weights_s = t.forward_s;
      t.out_floats = 100;
      t.params = params;
      p.at.back().push_back(t);
    }
  }
  return p;
}

const LinkModel kFast{1e-5, 4e9, 0};

TEST(PipelineSearch, RanksEveryShapeMicroBatchCountAndScheduleFastestFirst) {
  const std::vector<WholePlan> plans = rank_pipeline_plans(profile_of(1000, 0.1), 64, 2, kFast, {});
  std::set<std::string> seen;
  for (const WholePlan& p : plans) {
    EXPECT_EQ(p.stages * p.replicas, 2u);
    EXPECT_EQ(64 % (p.replicas * p.micros), 0u);
    EXPECT_EQ(p.micro_batch * p.replicas * p.micros, 64u);
    EXPECT_NE(p.schedule, PipelineSchedule::kOneFOneBAsync);  // another optimization: only when named
    if (p.stages == 1) {
      EXPECT_EQ(p.schedule, PipelineSchedule::kOneFOneB);
    }
    seen.insert(plan_name(p).substr(0, plan_name(p).find(" partition")));
  }
  // 1x2: M in 1..32 (6 counts); 2x1: M in 1..64 (7) under gpipe, 1f1b and zb.
  EXPECT_EQ(plans.size(), 6u + 7 * 3);
  EXPECT_EQ(seen.size(), plans.size());
  for (size_t i = 1; i < plans.size(); ++i) EXPECT_LE(plans[i - 1].step_s, plans[i].step_s);
}

TEST(PipelineSearch, PricesEachPlanAtItsOwnMicroBatchSize) {
  const LayerProfile p = profile_of(1000, 0.1);
  EXPECT_NEAR(p.timings(64)[0].forward_s, 6.4e-3, 1e-12);
  EXPECT_NEAR(p.timings(1)[0].forward_s, 0.2e-3, 1e-12);
  // Between two sizes timed, linear in the samples; beyond, per sample as at the nearest.
  EXPECT_NEAR(p.timings(32)[0].forward_s, 0.2e-3 + (6.4e-3 - 0.2e-3) * 31.0 / 63.0, 1e-12);
  EXPECT_NEAR(p.timings(128)[0].forward_s, 12.8e-3, 1e-12);
  // Data parallel with one micro-batch of 32 each beats 32 micro-batches of 1.
  PlanLimits dp;
  dp.stages = 1;
  const std::vector<WholePlan> plans = rank_pipeline_plans(p, 64, 2, kFast, dp);
  EXPECT_EQ(plans.front().micros, 1u);
  EXPECT_EQ(plans.back().micros, 32u);
}

TEST(PipelineSearch, TheAllreduceOfBigLayersOnASlowLinkMakesAPipelineTheBest) {
  // 1e7 parameters a layer at 100 mbit: a data-parallel step would send
  // 160 MB of gradients; the pipeline sends activations of 100 floats.
  const LinkModel slow{1e-4, 12.5e6, 0};
  const std::vector<WholePlan> plans = rank_pipeline_plans(profile_of(10'000'000, 0.1), 64, 2, slow, {});
  EXPECT_EQ(plans.front().stages, 2u) << plan_name(plans.front());
  EXPECT_GT(plans.back().allreduce_s, 1.0);
  // Small layers on a fast link: data parallel, no bubble.
  const std::vector<WholePlan> small = rank_pipeline_plans(profile_of(100, 0.1), 64, 2, kFast, {});
  EXPECT_EQ(small.front().replicas, 2u) << plan_name(small.front());
}

TEST(PipelineSearch, KeepsToWhatTheFlagsFixAndSaysWhenNothingFits) {
  const LayerProfile p = profile_of(1000, 0.1);
  PlanLimits l;
  l.stages = 2;
  l.micros = 4;
  for (const WholePlan& w : rank_pipeline_plans(p, 64, 2, kFast, l)) {
    EXPECT_EQ(w.stages, 2u);
    EXPECT_EQ(w.micros, 4u);
  }
  // 1f1b-async named: at M = 1 alone unless M is given (an update per micro-batch).
  l = {};
  l.schedule = PipelineSchedule::kOneFOneBAsync;
  const std::vector<WholePlan> async = rank_pipeline_plans(p, 64, 2, kFast, l);
  ASSERT_EQ(async.size(), 2u);  // 1x2 and 2x1
  for (const WholePlan& w : async) {
    EXPECT_EQ(w.schedule, PipelineSchedule::kOneFOneBAsync);
    EXPECT_EQ(w.micros, 1u);
  }
  l = {};
  l.stages = 2;
  l.partition = topology::parse_layer_counts("1,3", 4);
  l.schedule = PipelineSchedule::kGpipe;
  for (const WholePlan& w : rank_pipeline_plans(p, 64, 2, kFast, l)) {
    EXPECT_EQ(topology::layer_counts(w.pipeline.ranges), "1,3");
    EXPECT_EQ(w.schedule, PipelineSchedule::kGpipe);
  }
  l = {};
  l.micros = 3;  // divides neither 64 nor 32
  EXPECT_TRUE(plan_micro_batches(64, 2, 4, l).empty());
  EXPECT_THROW(rank_pipeline_plans(p, 64, 2, kFast, l), std::invalid_argument);
  l = {};
  l.stages = 3;  // does not divide 2 processes
  EXPECT_THROW(rank_pipeline_plans(p, 64, 2, kFast, l), std::invalid_argument);
  EXPECT_TRUE(plan_micro_batches(64, 8, 4, {}).size() > 0);  // 1x8, 2x4, 4x2
  EXPECT_TRUE(plan_micro_batches(64, 7, 4, {}).empty());     // 7 stages of 4 layers, or 7 replicas of 64
}

TEST(LayerProfile, TextReadsBackAndABadLineIsNamed) {
  LayerProfile p = profile_of(1000, 0.1);
  p.model = "in 28x28x1 dense:1x1x10:7850 sgd+momentum";
  p.machine = "host, CPU, 2 cores, OpenBLAS threads 1";
  p.date = "2026-11-26T08:30:00Z";
  const LayerProfile back = parse_profile(profile_text(p), "f");
  EXPECT_EQ(profile_text(back), profile_text(p));
  EXPECT_EQ(back.sizes, p.sizes);
  std::string bad = profile_text(p);
  bad.replace(bad.find("layer dense"), 11, "layer dense x");
  try {
    parse_profile(bad, "cache.txt");
    FAIL() << "a bad line was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("profile cache cache.txt line 9"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_profile("something else\n", "f"), std::invalid_argument);
  // A cache of the format before the weights' column: profiled again.
  std::string old = profile_text(p);
  old.replace(old.find("profile 2"), 9, "profile 1");
  EXPECT_THROW(parse_profile(old, "f"), std::invalid_argument);
  std::string longer = profile_text(back);  // weights' gradient longer than the whole backward
  const size_t line = longer.find("layer dense "), end = longer.find('\n', line);
  std::istringstream words(longer.substr(line, end - line));
  std::string layer, kind, f, b, r, w, out, params;
  words >> layer >> kind >> f >> b >> r >> w >> out >> params;
  longer.replace(line, end - line, "layer dense " + f + " " + b + " " + r + " 1 " + out + " " + params);
  try {
    parse_profile(longer, "cache.txt");
    FAIL() << "a weights' time above the backward's was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("longer than its whole backward"), std::string::npos) << e.what();
  }
}

TEST(LayerProfile, ACacheOfAnotherMachineIsProfiledAgainAndSaysSo) {
  testing::TempDir dir;
  trainer::ModelOptions mo;
  mo.name = "mlp";
  mo.hidden = {16};
  auto model = trainer::make_model(mo, 1);
  const std::filesystem::path file = dir.file("profile.txt");
  const trainer::OptimizerOptions opt;
  LayerProfile elsewhere = profile_of(1000, 0.1);
  elsewhere.model = model_key(*model, opt);
  elsewhere.machine = "another host";
  std::ofstream(file) << profile_text(elsewhere);
  const CachedProfile anew = cached_profile(file, *model, opt, {2, 4}, 1);
  EXPECT_NE(anew.said.find("it was measured on another host"), std::string::npos) << anew.said;
  EXPECT_EQ(anew.profile.machine, this_machine());
  EXPECT_EQ(anew.profile.sizes, (std::vector<size_t>{2, 4}));
  EXPECT_EQ(anew.profile.at[0].size(), model->layers().size());
  const CachedProfile cached = cached_profile(file, *model, opt, {4}, 1);
  EXPECT_NE(cached.said.find("layer profile from " + file.string()), std::string::npos) << cached.said;
  EXPECT_EQ(cached.profile.date, anew.profile.date);
  const CachedProfile more = cached_profile(file, *model, opt, {4, 8}, 1);
  EXPECT_NE(more.said.find("profiled 1 micro-batch sizes the cache lacked"), std::string::npos) << more.said;
  mo.hidden = {32};
  auto other = trainer::make_model(mo, 1);
  const CachedProfile of_other = cached_profile(file, *other, opt, {4}, 1);
  EXPECT_NE(of_other.said.find("it is of another model"), std::string::npos) << of_other.said;
}

}  // namespace
}  // namespace gossipd::daemon
