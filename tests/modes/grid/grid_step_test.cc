// The grid step (daemon/modes/grid/grid_step.h) against the serial trainer with
// the same seed and batches: every grid shape of 4 processes (ranks as
// threads over the real transport), uneven row blocks and batch slices, the
// MLP and the CNN (image rows split over the column, halos at the image's
// borders and between processes).
#include "daemon/modes/grid/grid_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "daemon/modes/grid/grid_comm.h"
#include "daemon/modes/grid/grid_plan.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/synthetic_data.h"
#include "trainer/models.h"
#include "trainer/optimizer.h"
#include "trainer/rng.h"

namespace gossipd::daemon {
namespace {

// A range of the modes' block, as the registry gives the grid one (Mode::tags).
const protocol::tags::Range kGridTags{protocol::tags::first(protocol::tags::User::kModes),
                                      GroupGridComm::kTagCount};

using topology::GridShape;

constexpr size_t kSamples = 120, kInput = 28 * 28, kBatch = 10, kSteps = 100;
constexpr uint64_t kSeed = 5;
constexpr float kLr = 0.02f;

using Data = gossipd::testing::SyntheticData;
Data synthetic() { return gossipd::testing::synthetic_data(kSamples, kInput); }

// The batch of step t: samples [t B, (t + 1) B) modulo the set.
size_t first_sample(size_t step) { return step * kBatch % kSamples; }

trainer::ModelOptions mlp() {
  trainer::ModelOptions mo;
  mo.name = "mlp";
  mo.hidden = {7, 5};  // rows over 4: 2,2,2,1 / 2,1,1,1; the 10 outputs 3,3,2,2
  return mo;
}

// The CNN's layers with few channels (the test is about the split, not the
// width): 28 image rows in units of 4 over 4 grid rows are 8, 8, 8, 4; the
// feature map's 7 rows 2, 2, 2, 1; dense1's 7 rows 2, 2, 2, 1.
trainer::ModelOptions small_cnn() {
  trainer::ModelOptions mo;
  mo.name = "cnn";
  mo.conv_channels = {3, 4};
  mo.hidden = {7};
  return mo;
}

trainer::OptimizerOptions sgd() { return gossipd::testing::momentum_sgd(); }

// LARS: each layer's step scaled by its norms, which the grid sums over the
// processes holding its blocks.
trainer::OptimizerOptions lars() {
  trainer::OptimizerOptions o = sgd();
  o.kind = trainer::OptimizerKind::kLars;
  o.lars_eta = 0.02f;
  return o;
}

struct Trajectory {
  std::vector<float> params;
  std::vector<double> losses;  // mean over the batch, per step
};

Trajectory serial_run(const Data& d, const trainer::ModelOptions& mo, const trainer::OptimizerOptions& oo) {
  auto model = trainer::make_model(mo, kSeed);
  const size_t n = model->params().size();
  trainer::Optimizer opt(oo, model->segments(), n);
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

Trajectory grid_run(const Data& d, const trainer::ModelOptions& mo, const trainer::OptimizerOptions& oo,
                    GridShape shape) {
  protocol::testing::TestCluster cluster(shape.procs());
  auto reference = trainer::make_model(mo, kSeed);
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
    GroupGridComm comm(cluster.node(r), cluster.ids(), shape, r, co, kGridTags);
    GridStep step(model, comm);
    trainer::Optimizer opt(oo, model.segments(), model.params().size());
    const topology::BlockRange slice = topology::block_range(kBatch, shape.cols, at.col);
    std::vector<double> losses;
    for (size_t t = 0; t < kSteps; ++t) {
      const size_t first = first_sample(t) + slice.begin;
      const auto got = step.train(d.x.data() + first * kInput, {d.y.data() + first, slice.size()}, kBatch);
      losses.push_back(got.loss * static_cast<double>(slice.size()) / kBatch);
      step.update(opt, kLr);
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

struct ExactCase {
  std::string model;
  GridShape shape;
  std::string optimizer = "sgd";
};

void PrintTo(const ExactCase& c, std::ostream* os) {
  *os << c.model << " " << c.shape.name() << " " << c.optimizer;
}

class GridExactness : public ::testing::TestWithParam<ExactCase> {};

TEST_P(GridExactness, HundredStepsMatchTheSerialTrainer) {
  const Data d = synthetic();
  const trainer::ModelOptions mo = GetParam().model == "cnn" ? small_cnn() : mlp();
  const trainer::OptimizerOptions oo = GetParam().optimizer == "lars" ? lars() : sgd();
  const Trajectory serial = serial_run(d, mo, oo);
  const Trajectory grid = grid_run(d, mo, oo, GetParam().shape);
  ASSERT_EQ(grid.params.size(), serial.params.size());
  EXPECT_LE(relative_l2(grid.params, serial.params), 1e-5);
  EXPECT_LE(gossipd::testing::max_relative_error(grid.params, serial.params), 1e-5);
  for (size_t t = 0; t < kSteps; ++t) ASSERT_NEAR(grid.losses[t], serial.losses[t], 1e-4) << "step " << t;
  const gossipd::testing::PassLosses pass =
      gossipd::testing::first_and_last_pass(serial.losses, kSamples / kBatch);
  EXPECT_LT(pass.last, pass.first);  // it trained
}

INSTANTIATE_TEST_SUITE_P(
    FourProcesses, GridExactness,
    ::testing::Values(ExactCase{"mlp", {1, 4}}, ExactCase{"mlp", {4, 1}}, ExactCase{"mlp", {2, 2}},
                      ExactCase{"cnn", {1, 4}}, ExactCase{"cnn", {4, 1}}, ExactCase{"cnn", {2, 2}},
                      ExactCase{"mlp", {2, 2}, "lars"}, ExactCase{"cnn", {2, 2}, "lars"}),
    [](const ::testing::TestParamInfo<ExactCase>& p) {
      return p.param.model + p.param.shape.name() + (p.param.optimizer == "sgd" ? "" : p.param.optimizer);
    });

// What the transport counts per step against what the planner predicts, per
// kind: the mean over the grid's processes of the payload bytes they sent.
struct BytesCase {
  std::string model;
  std::vector<int> hidden;
  size_t batch;
  GridShape shape;
};

class GridBytesAsPredicted : public ::testing::TestWithParam<BytesCase> {};

TEST_P(GridBytesAsPredicted, TransportCountsMatchThePlanWithinOnePercent) {
  const BytesCase& c = GetParam();
  trainer::ModelOptions mo;
  mo.name = c.model;
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
    GroupGridComm comm(cluster.node(r), cluster.ids(), c.shape, r, co, kGridTags);
    GridStep step(model, comm);
    const topology::BlockRange slice = topology::block_range(c.batch, c.shape.cols, at.col);
    step.train(x.data() + slice.begin * kInput, {y.data() + slice.begin, slice.size()}, c.batch);
    std::lock_guard lock(mu);
    sum.forward += comm.bytes().forward;
    sum.input_gradient += comm.bytes().input_gradient;
    sum.weight_gradient += comm.bytes().weight_gradient;
    sum.halo += comm.bytes().halo;
  }));
  const double procs = static_cast<double>(c.shape.procs());
  const auto expect_close = [&](uint64_t counted, double words, const char* kind) {
    const double mean = static_cast<double>(counted) / procs;
    EXPECT_NEAR(mean, words * sizeof(float), 0.01 * words * sizeof(float)) << kind << " " << c.shape.name();
  };
  expect_close(sum.forward, plan.words.forward, "forward");
  expect_close(sum.input_gradient, plan.words.input_gradient, "input gradient");
  expect_close(sum.weight_gradient, plan.words.weight_gradient, "weight gradient");
  expect_close(sum.halo, plan.words.halo, "halo");
}

INSTANTIATE_TEST_SUITE_P(EveryShapeOfFour, GridBytesAsPredicted,
                         ::testing::Values(BytesCase{"mlp", {}, 64, {1, 4}}, BytesCase{"mlp", {}, 64, {2, 2}},
                                           BytesCase{"mlp", {}, 64, {4, 1}}, BytesCase{"cnn", {}, 16, {1, 4}},
                                           BytesCase{"cnn", {}, 16, {2, 2}}, BytesCase{"cnn", {}, 16, {4, 1}},
                                           BytesCase{"mlp", {2048, 2048, 2048}, 512, {1, 4}},
                                           BytesCase{"mlp", {2048, 2048, 2048}, 512, {2, 2}},
                                           BytesCase{"mlp", {2048, 2048, 2048}, 512, {4, 1}}),
                         [](const ::testing::TestParamInfo<BytesCase>& p) {
                           return (p.param.hidden.empty() ? p.param.model : "wide") + p.param.shape.name();
                         });

TEST(GridModel, RefusesALayerAfterTheFirstDenseThatIsNotDenseOrAReLU) {
  std::vector<PlanLayer> layers = plan_layers(*trainer::make_model(mlp(), 1));
  PlanLayer pool;
  pool.kind = PlanLayer::Kind::kPool;
  pool.name = "maxpool";
  layers.insert(layers.begin() + 1, pool);
  EXPECT_THROW(GridModel(layers, {2, 2}, {0, 0}), std::invalid_argument);
  EXPECT_NE(GridModel::refusal(layers).value_or("").find("maxpool"), std::string::npos);
}

// A 5x5 convolution over 8 grid rows of an 8-row image: one row a process,
// two wanted by each neighbour (the planner refuses the shape first).
TEST(GridModel, RefusesAHaloDeeperThanAProcesssRows) {
  std::vector<PlanLayer> layers = plan_layers(*trainer::make_model(small_cnn(), 1));
  layers.erase(layers.begin() + 1, layers.end() - 3);  // conv1, then dense1, relu, dense2
  layers.front().kernel = 5;
  layers.front().in.height = layers.front().out.height = 8;
  try {
    GridModel(layers, {8, 1}, {0, 0});
    ADD_FAILURE() << "built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("conv1 takes 2 halo rows from each neighbour"), std::string::npos)
        << e.what();
  }
}

class GridModelStore : public ::testing::TestWithParam<std::string> {};

TEST_P(GridModelStore, LoadThenStoreGivesTheSerialParametersBack) {
  auto serial = trainer::make_model(GetParam() == "cnn" ? small_cnn() : mlp(), kSeed);
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

INSTANTIATE_TEST_SUITE_P(Models, GridModelStore, ::testing::Values("mlp", "cnn"));

}  // namespace
}  // namespace gossipd::daemon
