// The grid step (daemon/grid/grid_step.h) against the serial trainer with
// the same seed and batches: every grid shape of 4 processes (ranks as
// threads over the real transport), uneven row blocks and batch slices.
#include "daemon/grid/grid_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "daemon/plan/grid_plan.h"
#include "tests/protocol/test_cluster.h"
#include "trainer/models.h"
#include "trainer/optimizer.h"
#include "trainer/rng.h"

namespace gossipd::daemon {
namespace {

using topology::GridShape;

constexpr size_t kSamples = 120, kInput = 28 * 28, kBatch = 10, kSteps = 100;
constexpr uint64_t kSeed = 5;
constexpr float kLr = 0.05f;

struct Data {
  std::vector<float> x;
  std::vector<uint8_t> y;
};

Data synthetic() {
  Data d;
  trainer::Rng rng(11);
  d.x.resize(kSamples * kInput);
  for (float& v : d.x) v = static_cast<float>(rng.normal());
  for (size_t i = 0; i < kSamples; ++i) d.y.push_back(static_cast<uint8_t>(rng.below(10)));
  return d;
}

// The batch of step t: samples [t B, (t + 1) B) modulo the set.
size_t first_sample(size_t step) { return step * kBatch % kSamples; }

trainer::ModelOptions mlp() {
  trainer::ModelOptions mo;
  mo.name = "mlp";
  mo.hidden = {7, 5};  // rows over 4: 2,2,2,1 / 2,1,1,1; the 10 outputs 3,3,2,2
  return mo;
}

trainer::OptimizerOptions sgd() {
  trainer::OptimizerOptions o;
  o.momentum = 0.9f;
  o.weight_decay = 5e-4f;
  return o;
}

struct Trajectory {
  std::vector<float> params;
  std::vector<double> losses;  // mean over the batch, per step
};

Trajectory serial_run(const Data& d) {
  auto model = trainer::make_model(mlp(), kSeed);
  const size_t n = model->params().size();
  trainer::Optimizer opt(sgd(), model->segments(), n);
  trainer::SoftmaxCrossEntropy loss(10);
  std::vector<float> dlogits(kBatch * 10);
  Trajectory run;
  for (size_t t = 0; t < kSteps; ++t) {
    const float* x = d.x.data() + first_sample(t) * kInput;
    const float* logits = model->forward(x, kBatch);
    run.losses.push_back(loss.compute(logits, {d.y.data() + first_sample(t), kBatch}, dlogits).loss);
    model->backward(x, dlogits.data(), kBatch);
    opt.step(model->params(), model->grads(), kLr);
  }
  run.params.assign(model->params().begin(), model->params().end());
  return run;
}

Trajectory grid_run(const Data& d, GridShape shape) {
  protocol::testing::TestCluster cluster(shape.procs());
  auto reference = trainer::make_model(mlp(), kSeed);
  const std::vector<PlanLayer> layers = plan_layers(*reference);
  Trajectory run;
  run.params.assign(reference->params().size(), 0.0f);
  run.losses.assign(kSteps, 0.0);
  std::mutex mu;
  protocol::testing::expect_no_errors(cluster.run([&](size_t r) {
    const topology::GridCoord at = topology::grid_coord(shape, r);
    GridModel model(layers, shape, at);
    model.load(reference->params());
    protocol::CollectiveOptions co;
    co.timeout = std::chrono::seconds(20);
    GroupGridComm comm(cluster.node(r), cluster.ids(), shape, r, co);
    GridStep step(model, comm);
    trainer::Optimizer opt(sgd(), {{"grid", 0, model.params().size()}}, model.params().size());
    const topology::BlockRange slice = topology::block_range(kBatch, shape.cols, at.col);
    std::vector<double> losses;
    for (size_t t = 0; t < kSteps; ++t) {
      const size_t first = first_sample(t) + slice.begin;
      const auto got = step.train(d.x.data() + first * kInput, {d.y.data() + first, slice.size()}, kBatch);
      losses.push_back(got.loss * static_cast<double>(slice.size()) / kBatch);
      opt.step(model.params(), model.grads(), kLr);
    }
    std::lock_guard lock(mu);
    if (at.row == 0) {
      for (size_t t = 0; t < kSteps; ++t) run.losses[t] += losses[t];
    }
    if (at.col == 0) model.store(run.params);
  }));
  return run;
}

double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += std::pow(static_cast<double>(a[i]) - b[i], 2);
    norm += std::pow(static_cast<double>(b[i]), 2);
  }
  return std::sqrt(diff / norm);
}

class GridExactness : public ::testing::TestWithParam<GridShape> {};

TEST_P(GridExactness, HundredStepsMatchTheSerialTrainer) {
  const Data d = synthetic();
  const Trajectory serial = serial_run(d);
  const Trajectory grid = grid_run(d, GetParam());
  ASSERT_EQ(grid.params.size(), serial.params.size());
  EXPECT_LE(relative_l2(grid.params, serial.params), 1e-5);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < serial.params.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(grid.params[i]) - serial.params[i]));
    scale = std::max(scale, std::abs(static_cast<double>(serial.params[i])));
  }
  EXPECT_LE(worst, 1e-5 * scale);
  for (size_t t = 0; t < kSteps; ++t) ASSERT_NEAR(grid.losses[t], serial.losses[t], 1e-4) << "step " << t;
  EXPECT_LT(serial.losses.back(), serial.losses.front());  // it trained
}

INSTANTIATE_TEST_SUITE_P(FourProcesses, GridExactness,
                         ::testing::Values(GridShape{1, 4}, GridShape{4, 1}, GridShape{2, 2}),
                         [](const ::testing::TestParamInfo<GridShape>& p) {
                           return "grid" + p.param.name();
                         });

// What the transport counts per step against what the planner predicts, per
// kind: the mean over the grid's processes of the payload bytes they sent.
struct BytesCase {
  std::vector<int> hidden;
  size_t batch;
  GridShape shape;
};

class GridBytesAsPredicted : public ::testing::TestWithParam<BytesCase> {};

TEST_P(GridBytesAsPredicted, TransportCountsMatchThePlanWithinOnePercent) {
  const BytesCase& c = GetParam();
  trainer::ModelOptions mo;
  mo.name = "mlp";
  mo.hidden = c.hidden;
  auto reference = trainer::make_model(mo, kSeed);
  GridPlanInput in;
  in.layers = plan_layers(*reference);
  in.batch = c.batch;
  const GridPlan plan = plan_grid(in, c.shape, {1e-5, 1e9}, 1e10);
  std::vector<float> x(c.batch * kInput, 0.5f);
  std::vector<uint8_t> y(c.batch, 3);
  protocol::testing::TestCluster cluster(c.shape.procs());
  GridBytes sum;
  std::mutex mu;
  protocol::testing::expect_no_errors(cluster.run([&](size_t r) {
    const topology::GridCoord at = topology::grid_coord(c.shape, r);
    GridModel model(in.layers, c.shape, at);
    model.load(reference->params());
    protocol::CollectiveOptions co;
    co.timeout = std::chrono::seconds(60);
    GroupGridComm comm(cluster.node(r), cluster.ids(), c.shape, r, co);
    GridStep step(model, comm);
    const topology::BlockRange slice = topology::block_range(c.batch, c.shape.cols, at.col);
    step.train(x.data() + slice.begin * kInput, {y.data() + slice.begin, slice.size()}, c.batch);
    std::lock_guard lock(mu);
    sum.forward += comm.bytes().forward;
    sum.input_gradient += comm.bytes().input_gradient;
    sum.weight_gradient += comm.bytes().weight_gradient;
  }));
  const double procs = static_cast<double>(c.shape.procs());
  const auto expect_close = [&](uint64_t counted, double words, const char* kind) {
    const double mean = static_cast<double>(counted) / procs;
    EXPECT_NEAR(mean, words * sizeof(float), 0.01 * words * sizeof(float)) << kind << " " << c.shape.name();
  };
  expect_close(sum.forward, plan.words.forward, "forward");
  expect_close(sum.input_gradient, plan.words.input_gradient, "input gradient");
  expect_close(sum.weight_gradient, plan.words.weight_gradient, "weight gradient");
}

INSTANTIATE_TEST_SUITE_P(EveryShapeOfFour, GridBytesAsPredicted,
                         ::testing::Values(BytesCase{{}, 64, {1, 4}}, BytesCase{{}, 64, {2, 2}},
                                           BytesCase{{}, 64, {4, 1}},
                                           BytesCase{{2048, 2048, 2048}, 512, {1, 4}},
                                           BytesCase{{2048, 2048, 2048}, 512, {2, 2}},
                                           BytesCase{{2048, 2048, 2048}, 512, {4, 1}}),
                         [](const ::testing::TestParamInfo<BytesCase>& p) {
                           return std::string(p.param.hidden.empty() ? "mlp" : "wide") + p.param.shape.name();
                         });

TEST(GridModel, RefusesLayersItCannotSplitYet) {
  trainer::ModelOptions mo;
  mo.name = "cnn";
  auto cnn = trainer::make_model(mo, 1);
  EXPECT_THROW(GridModel(plan_layers(*cnn), {2, 2}, {0, 0}), std::invalid_argument);
}

TEST(GridModel, LoadThenStoreGivesTheSerialParametersBack) {
  auto serial = trainer::make_model(mlp(), kSeed);
  const std::vector<PlanLayer> layers = plan_layers(*serial);
  const GridShape shape{4, 1};
  std::vector<float> back(serial->params().size(), std::nanf(""));
  for (size_t r = 0; r < shape.procs(); ++r) {
    GridModel m(layers, shape, topology::grid_coord(shape, r));
    m.load(serial->params());
    m.store(back);
  }
  EXPECT_TRUE(std::equal(back.begin(), back.end(), serial->params().begin()));
}

}  // namespace
}  // namespace gossipd::daemon
