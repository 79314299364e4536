// The pipeline step (daemon/modes/pipeline/pipeline_step.h) against a serial run
// that accumulates the same micro-batches in the same order, with the same
// seed: gpipe, 1f1b and zb at K = 2 and 4 (stages as threads over the real
// transport), the MLP and the CNN, partitions given by hand and planned; what each
// stage holds in flight; 1f1b-async keeps its pipeline full across batches.
#include "daemon/modes/pipeline/pipeline_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "daemon/modes/pipeline/pipeline_plan.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/synthetic_data.h"
#include "trainer/models.h"
#include "trainer/rng.h"

namespace gossipd::daemon {
namespace {

// A range of the modes' block, as the registry gives the pipeline one (Mode::tags).
const protocol::tags::Range kPipelineTags{protocol::tags::first(protocol::tags::User::kModes),
                                          PipelineComm::kTagCount};

using topology::PipelineSchedule;

constexpr size_t kSamples = 96, kInput = 28 * 28, kBatch = 8, kMicros = 4, kSteps = 100;
constexpr uint64_t kSeed = 5;
constexpr float kLr = 0.02f;

using Data = gossipd::testing::SyntheticData;
Data synthetic() { return gossipd::testing::synthetic_data(kSamples, kInput); }

size_t first_sample(size_t step) { return step * kBatch % kSamples; }

trainer::ModelOptions small(const std::string& name) {
  trainer::ModelOptions mo;
  mo.name = name;
  mo.hidden = {12, 7};
  if (name == "cnn") {
    mo.conv_channels = {3, 4};
    mo.hidden = {9};
  }
  return mo;
}

trainer::OptimizerOptions sgd() { return gossipd::testing::momentum_sgd(); }

struct Trajectory {
  std::vector<float> params;
  std::vector<double> losses;
};

// The samples of step t: kBatch per replica, replica d's after d - 1's.
size_t first_sample(size_t step, size_t replicas) { return step * kBatch * replicas % kSamples; }

// Each step: the batch's micro-batches forward and backward in order, their
// gradients (of the batch's mean loss) summed, one optimizer step. With D
// replicas the batch is theirs together.
Trajectory serial_run(const Data& d, const trainer::ModelOptions& mo, size_t replicas = 1) {
  auto model = trainer::make_model(mo, kSeed);
  trainer::Optimizer opt(sgd(), model->segments(), model->params().size());
  trainer::SoftmaxCrossEntropy loss(10);
  const size_t mb = kBatch / kMicros;
  std::vector<float> dlogits(mb * 10), sum(model->params().size());
  Trajectory run;
  const size_t micros = kMicros * replicas;
  for (size_t t = 0; t < kSteps; ++t) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    double l = 0;
    for (size_t m = 0; m < micros; ++m) {
      const size_t first = first_sample(t, replicas) + m * mb;
      const float* x = d.x.data() + first * kInput;
      l += loss.compute(model->forward(x, static_cast<int>(mb)), {d.y.data() + first, mb}, dlogits).loss;
      for (float& v : dlogits) v /= static_cast<float>(micros);
      model->backward(x, dlogits.data(), static_cast<int>(mb));
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += model->grads()[i];
    }
    run.losses.push_back(l / static_cast<double>(micros));
    opt.step(model->params(), sum, kLr);
  }
  run.params.assign(model->params().begin(), model->params().end());
  return run;
}

struct PipelineRun {
  Trajectory trajectory;
  std::vector<size_t> most_in_flight;  // per stage
  std::vector<size_t> most_stashed;    // per stage: high-water floats
  std::vector<size_t> stash_floats;    // per stage: one micro-batch's activations
  std::vector<bool> splits;            // per stage: a layer splits its backward (dense, conv2d)
};

PipelineRun pipeline_run(const Data& d, const trainer::ModelOptions& mo, PipelineSchedule schedule,
                         const topology::LayerRanges& ranges, size_t replicas = 1) {
  const size_t k = ranges.stages();
  protocol::testing::TestCluster cluster(k * replicas);
  PipelineRun run;
  run.trajectory.losses.assign(kSteps, 0.0);
  run.trajectory.params.resize(trainer::make_model(mo, kSeed)->params().size());
  run.most_in_flight.resize(k);
  run.most_stashed.resize(k);
  run.stash_floats.resize(k);
  run.splits.resize(k);
  std::mutex mu;
  protocol::testing::expect_no_errors(cluster.run([&](size_t r) {
    const topology::PipelineCoord at = topology::pipeline_coord({k, replicas}, r);
    auto model = trainer::make_model(mo, kSeed);
    trainer::Stage stage(*model, ranges.begin(at.stage), ranges.end(at.stage));
    trainer::Optimizer opt(sgd(), stage.segments(), stage.params().size());
    protocol::CollectiveOptions co;
    co.timeout = std::chrono::seconds(20);
    PipelineComm comm(cluster.node(r), cluster.ids(), {k, replicas}, r, co, kPipelineTags);
    PipelineStepOptions o;
    o.schedule = schedule;
    o.micros = kMicros;
    o.batch = kBatch;
    PipelineStep step(stage, comm, opt, o);
    std::vector<double> losses;
    for (size_t t = 0; t < kSteps; ++t) {
      const size_t first = first_sample(t, replicas) + at.replica * kBatch;
      const auto got =
          step.train({d.x.data() + first * kInput, kBatch * kInput}, {d.y.data() + first, kBatch}, kLr);
      losses.push_back(got.loss);
    }
    std::lock_guard lock(mu);
    if (comm.last()) {
      for (size_t t = 0; t < kSteps; ++t)
        run.trajectory.losses[t] += losses[t] / static_cast<double>(replicas);
    }
    std::copy(stage.params().begin(), stage.params().end(), run.trajectory.params.begin() + stage.offset());
    run.most_in_flight[at.stage] = stage.most_in_flight();
    run.most_stashed[at.stage] = stage.most_stashed_floats();
    run.stash_floats[at.stage] =
        trainer::Stage::stash_floats(*model, stage.first(), stage.last(), kBatch / kMicros);
    for (size_t i = stage.first(); i < stage.last(); ++i)
      run.splits[at.stage] = run.splits[at.stage] || model->layers()[i]->splits_backward();
  }));
  return run;
}

struct ExactCase {
  std::string model;
  PipelineSchedule schedule;
  std::string counts;  // layers per stage
};

void PrintTo(const ExactCase& c, std::ostream* os) {
  *os << c.model << " " << topology::schedule_name(c.schedule) << " " << c.counts;
}

class PipelineExactness : public ::testing::TestWithParam<ExactCase> {};

// "L,L,..." by hand, or "planned:K": the planner's fastest K-stage
// partition of the model, its layers timed here.
topology::LayerRanges partition(const trainer::ModelOptions& mo, const std::string& counts) {
  auto model = trainer::make_model(mo, kSeed);
  const std::string planned = "planned:";
  if (counts.rfind(planned, 0) != 0) return topology::parse_layer_counts(counts, model->layers().size());
  PipelinePlanInput in = measure_pipeline(*model, sgd(), kBatch / kMicros, 3);
  in.micros = kMicros;
  in.link = LinkModel{1e-5, 4e9};
  return best_partition(in, std::stoul(counts.substr(planned.size()))).ranges;
}

TEST_P(PipelineExactness, HundredStepsMatchTheSerialMicroBatchedRun) {
  const ExactCase& c = GetParam();
  const Data d = synthetic();
  const trainer::ModelOptions mo = small(c.model);
  const topology::LayerRanges ranges = partition(mo, c.counts);
  const Trajectory serial = serial_run(d, mo);
  const PipelineRun pipe = pipeline_run(d, mo, c.schedule, ranges);
  EXPECT_LE(gossipd::testing::max_relative_error(pipe.trajectory.params, serial.params), 1e-5);
  for (size_t t = 0; t < kSteps; ++t)
    ASSERT_NEAR(pipe.trajectory.losses[t], serial.losses[t], 1e-5) << "step " << t;
  const gossipd::testing::PassLosses pass =
      gossipd::testing::first_and_last_pass(serial.losses, kSamples / kBatch);
  EXPECT_LT(pass.last, pass.first);  // it trained
  const size_t k = ranges.stages();
  for (size_t s = 0; s < k; ++s) {
    size_t bound = c.schedule == PipelineSchedule::kGpipe ? kMicros : std::min(k - s, kMicros);
    // zb: one more (the first stage's warm-up, the others' between B and W).
    if (c.schedule == PipelineSchedule::kZeroBubble) bound = std::min(k - s + 1, kMicros);
    EXPECT_EQ(pipe.most_in_flight[s], bound) << "stage " << s;
    const size_t activations = pipe.most_in_flight[s] * pipe.stash_floats[s];
    if (c.schedule == PipelineSchedule::kZeroBubble && s > 0 && pipe.splits[s]) {
      // With output gradients kept from B to W: more, within the planner's bound.
      EXPECT_GT(pipe.most_stashed[s], activations) << "stage " << s;
      EXPECT_LE(pipe.most_stashed[s], activations + 2 * pipe.stash_floats[s]) << "stage " << s;
    } else {
      EXPECT_EQ(pipe.most_stashed[s], activations) << "stage " << s;
    }
  }
}

// zb runs every backward in two halves at other times than 1f1b does, and
// the sums come out the same bit for bit.
TEST(PipelineZeroBubble, SameParametersAndLossesBitForBitAsOneFOneB) {
  const Data d = synthetic();
  for (const auto& [name, counts] : {std::pair{"mlp", "1,1,2,1"}, std::pair{"cnn", "4,6"}}) {
    const trainer::ModelOptions mo = small(name);
    const topology::LayerRanges ranges =
        topology::parse_layer_counts(counts, trainer::make_model(mo, kSeed)->layers().size());
    const PipelineRun zb = pipeline_run(d, mo, PipelineSchedule::kZeroBubble, ranges);
    const PipelineRun one = pipeline_run(d, mo, PipelineSchedule::kOneFOneB, ranges);
    EXPECT_EQ(zb.trajectory.params, one.trajectory.params) << name;
    EXPECT_EQ(zb.trajectory.losses, one.trajectory.losses) << name;
  }
}

std::string case_name(const ::testing::TestParamInfo<ExactCase>& p) {
  const char* schedules[] = {"Gpipe", "OneFOneB", "OneFOneBAsync", "ZeroBubble"};
  std::string name = p.param.model + schedules[static_cast<int>(p.param.schedule)];
  for (char ch : p.param.counts) name += ch == ',' || ch == ':' ? '_' : ch;
  return name;
}

// The MLP's 5 layers (dense relu dense relu dense), the CNN's 10 (conv relu
// pool conv relu pool flatten dense relu dense).
INSTANTIATE_TEST_SUITE_P(ByHandAndPlanned, PipelineExactness,
                         ::testing::Values(ExactCase{"mlp", PipelineSchedule::kGpipe, "2,3"},
                                           ExactCase{"mlp", PipelineSchedule::kOneFOneB, "2,3"},
                                           ExactCase{"mlp", PipelineSchedule::kGpipe, "1,1,2,1"},
                                           ExactCase{"mlp", PipelineSchedule::kOneFOneB, "1,1,2,1"},
                                           ExactCase{"cnn", PipelineSchedule::kGpipe, "4,6"},
                                           ExactCase{"cnn", PipelineSchedule::kOneFOneB, "4,6"},
                                           ExactCase{"cnn", PipelineSchedule::kGpipe, "1,3,3,3"},
                                           ExactCase{"cnn", PipelineSchedule::kOneFOneB, "1,3,3,3"},
                                           ExactCase{"mlp", PipelineSchedule::kOneFOneB, "planned:2"},
                                           ExactCase{"cnn", PipelineSchedule::kGpipe, "planned:4"},
                                           ExactCase{"mlp", PipelineSchedule::kZeroBubble, "2,3"},
                                           ExactCase{"mlp", PipelineSchedule::kZeroBubble, "1,1,2,1"},
                                           ExactCase{"cnn", PipelineSchedule::kZeroBubble, "4,6"},
                                           ExactCase{"cnn", PipelineSchedule::kZeroBubble, "1,3,3,3"}),
                         case_name);

// Two pipelines of two stages, each on its own half of the batch: the
// stages' gradients averaged over the replicas give the serial run over the
// whole batch.
TEST(PipelineReplicas, TwoPipelinesOfTwoStagesMatchTheSerialRunOverBothBatches) {
  const Data d = synthetic();
  const trainer::ModelOptions mo = small("mlp");
  const Trajectory serial = serial_run(d, mo, 2);
  const PipelineRun pipe =
      pipeline_run(d, mo, PipelineSchedule::kOneFOneB, topology::parse_layer_counts("2,3", 5), 2);
  EXPECT_LE(gossipd::testing::max_relative_error(pipe.trajectory.params, serial.params), 1e-5);
  for (size_t t = 0; t < kSteps; ++t)
    ASSERT_NEAR(pipe.trajectory.losses[t], serial.losses[t], 1e-5) << "step " << t;
}

// An update per micro-batch of 2 samples: the synchronous rate is too much
// for the random data's (noisy) gradients.
constexpr float kAsyncLr = kLr / 4;

// 1f1b-async: the first stage still holds the last micro-batch of a batch
// when the next batch starts (no drain), except at the epoch's end; and
// the pipeline trains.
TEST(PipelineAsync, KeepsThePipelineFullAcrossBatchesAndTrains) {
  const Data d = synthetic();
  const trainer::ModelOptions mo = small("mlp");
  constexpr size_t kPerEpoch = kSamples / kBatch;
  protocol::testing::TestCluster cluster(2);
  std::vector<size_t> held(kSteps);
  std::vector<double> losses(kSteps);
  protocol::testing::expect_no_errors(cluster.run([&](size_t r) {
    auto model = trainer::make_model(mo, kSeed);
    trainer::Stage stage(*model, r == 0 ? 0 : 2, r == 0 ? 2 : 5);
    trainer::Optimizer opt(sgd(), stage.segments(), stage.params().size());
    protocol::CollectiveOptions co;
    co.timeout = std::chrono::seconds(20);
    PipelineComm comm(cluster.node(r), cluster.ids(), {2, 1}, r, co, kPipelineTags);
    PipelineStepOptions o;
    o.schedule = PipelineSchedule::kOneFOneBAsync;
    o.micros = kMicros;
    o.batch = kBatch;
    o.steps_per_epoch = kPerEpoch;
    PipelineStep step(stage, comm, opt, o);
    for (size_t t = 0; t < kSteps; ++t) {
      const size_t first = first_sample(t);
      const auto got =
          step.train({d.x.data() + first * kInput, kBatch * kInput}, {d.y.data() + first, kBatch}, kAsyncLr);
      if (r == 0) held[t] = stage.in_flight();
      if (r == 1) losses[t] = got.loss;
    }
  }));
  for (size_t t = 0; t < kSteps; ++t) EXPECT_EQ(held[t], (t + 1) % kPerEpoch == 0 ? 0u : 1u) << "batch " << t;
  double early = 0, late = 0;
  for (size_t t = 0; t < 10; ++t) {
    early += losses[t];
    late += losses[kSteps - 1 - t];
  }
  EXPECT_LT(late, 0.8 * early);
}

}  // namespace
}  // namespace gossipd::daemon
