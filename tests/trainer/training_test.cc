#include <cblas.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "trainer/dataset.h"
#include "trainer/models.h"
#include "trainer/trainer.h"

namespace gossipd::trainer {
namespace {

class Training : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    openblas_set_num_threads(1);
    train_ = new Dataset(load_fashion_mnist(GOSSIPD_TEST_DATA_DIR, Split::kTrain));
    test_ = new Dataset(load_fashion_mnist(GOSSIPD_TEST_DATA_DIR, Split::kTest).head(2000));
  }
  static void TearDownTestSuite() {
    delete train_;
    delete test_;
  }

  static std::unique_ptr<Trainer> make(const std::string& model, const Dataset& data, uint64_t seed) {
    ModelOptions mo;
    mo.name = model;
    if (model == "cnn") {
      mo.conv_channels = {4, 8};
      mo.hidden = {32};
    }
    TrainerOptions to;
    to.batch = 32;
    to.schedule.base_lr = 0.05f;
    to.schedule.total_epochs = 2;
    to.schedule.warmup_epochs = 0.5f;
    to.optimizer.weight_decay = 5e-4f;
    to.sampler.seed = seed;
    return std::make_unique<Trainer>(make_model(mo, seed), data, to);
  }

  static Dataset* train_;
  static Dataset* test_;
};

Dataset* Training::train_ = nullptr;
Dataset* Training::test_ = nullptr;

TEST_F(Training, SameSeedOneThreadIsBitIdentical) {
  Dataset small = train_->head(512);
  for (std::string model : {"mlp", "cnn"}) {
    auto a = make(model, small, 9);
    auto b = make(model, small, 9);
    auto c = make(model, small, 10);
    for (uint32_t e = 0; e < 2; ++e) {
      EpochStats sa = a->train_epoch(e);
      EpochStats sb = b->train_epoch(e);
      EXPECT_EQ(sa.loss, sb.loss) << model;
      c->train_epoch(e);
    }
    auto pa = a->model().params();
    auto pb = b->model().params();
    ASSERT_EQ(pa.size(), pb.size());
    EXPECT_EQ(std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float)), 0) << model;
    auto pc = c->model().params();
    EXPECT_NE(std::memcmp(pa.data(), pc.data(), pa.size() * sizeof(float)), 0) << model;
  }
}

TEST_F(Training, ShortMlpRunOnASubsetBeatsSeventyFivePercent) {
  Dataset subset = train_->head(10000);
  auto t = make("mlp", subset, 1);
  const double before = t->evaluate(*test_).accuracy;
  double first_loss = 0, last_loss = 0;
  for (uint32_t e = 0; e < 2; ++e) {
    EpochStats s = t->train_epoch(e);
    if (e == 0) first_loss = s.loss;
    last_loss = s.loss;
    EXPECT_EQ(s.samples, subset.size());
  }
  EvalResult ev = t->evaluate(*test_);
  EXPECT_LT(before, 0.3);
  EXPECT_LT(last_loss, first_loss);
  EXPECT_GT(ev.accuracy, 0.75) << "test accuracy " << ev.accuracy;
  EXPECT_EQ(ev.samples, test_->size());
}

TEST_F(Training, SplitStepsMatchTrainStep) {
  Dataset small = train_->head(256);
  auto a = make("mlp", small, 3);
  auto b = make("mlp", small, 3);
  std::vector<uint32_t> idx(32);
  for (uint32_t i = 0; i < 32; ++i) idx[i] = i * 3;
  a->train_step(idx);
  b->compute_gradients(idx);
  b->apply_gradients(b->current_lr());
  auto pa = a->model().params();
  auto pb = b->model().params();
  EXPECT_EQ(std::memcmp(pa.data(), pb.data(), pa.size() * sizeof(float)), 0);
  EXPECT_EQ(a->step_count(), 1u);
}

}  // namespace
}  // namespace gossipd::trainer
