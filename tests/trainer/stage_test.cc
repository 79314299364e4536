// trainer::Stage: a model cut into stages and run with micro-batches
// interleaved (every forward before any backward, the stages chained by
// hand) accumulates the gradients a serial run of the same micro-batches
// does, to float rounding (the layers add each micro-batch's gradient
// inside their GEMM, the serial run after it), for the MLP and the CNN;
// stashes are counted; weight stashing runs a backward with the weights of
// its forward; a backward split in two (input, then weights' gradient)
// makes the same floats.
#include "trainer/stage.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "trainer/loss.h"
#include "trainer/models.h"
#include "trainer/rng.h"

namespace gossipd::trainer {
namespace {

constexpr int kMicro = 3, kMicros = 4;
constexpr uint64_t kSeed = 9;

ModelOptions small(const char* name) {
  ModelOptions mo;
  mo.name = name;
  mo.hidden = {12, 7};
  if (mo.name == "cnn") {
    mo.conv_channels = {3, 4};
    mo.hidden = {9};
  }
  return mo;
}

struct Batch {
  std::vector<float> x;
  std::vector<uint8_t> y;
};

Batch batch_of(const Model& m, size_t samples) {
  Rng rng(3);
  Batch b;
  b.x.resize(samples * m.input_shape().size());
  for (float& v : b.x) v = static_cast<float>(rng.normal());
  for (size_t i = 0; i < samples; ++i) b.y.push_back(static_cast<uint8_t>(rng.below(10)));
  return b;
}

// d(mean loss over the batch)/d(logits) of micro-batch `m`'s logits.
std::vector<float> dlogits(const float* logits, const Batch& b, int m) {
  SoftmaxCrossEntropy loss(10);
  std::vector<float> d(static_cast<size_t>(kMicro) * 10);
  loss.compute(logits, {b.y.data() + m * kMicro, static_cast<size_t>(kMicro)}, d);
  for (float& v : d) v /= kMicros;
  return d;
}

std::vector<float> serial_grads(const ModelOptions& mo, const Batch& b) {
  auto model = make_model(mo, kSeed);
  const size_t in = model->input_shape().size();
  std::vector<float> sum(model->params().size(), 0.0f);
  for (int m = 0; m < kMicros; ++m) {
    const float* x = b.x.data() + static_cast<size_t>(m * kMicro) * in;
    const std::vector<float> d = dlogits(model->forward(x, kMicro), b, m);
    model->backward(x, d.data(), kMicro);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += model->grads()[i];
  }
  return sum;
}

// Every layer a stage of its own would be the extreme; these cut the
// models at a few places, the CNN between its convolutions and pools.
std::vector<size_t> cuts(const Model& m) {
  const size_t n = m.layers().size();
  return {0, 1, n / 2, n - 1, n};
}

TEST(Stage, InterleavedMicroBatchesAccumulateTheSerialGradients) {
  for (const char* name : {"mlp", "cnn"}) {
    const ModelOptions mo = small(name);
    auto model = make_model(mo, kSeed);
    const Batch b = batch_of(*model, kMicro * kMicros);
    const std::vector<size_t> at = cuts(*model);
    std::vector<std::unique_ptr<Stage>> stages;
    for (size_t k = 0; k + 1 < at.size(); ++k)
      stages.push_back(std::make_unique<Stage>(*model, at[k], at[k + 1]));
    const size_t in = model->input_shape().size();
    std::vector<std::vector<float>> logits(kMicros);
    for (int m = 0; m < kMicros; ++m) {
      std::span<const float> x(b.x.data() + static_cast<size_t>(m * kMicro) * in, kMicro * in);
      for (auto& s : stages) x = s->forward(static_cast<uint64_t>(m), x, kMicro);
      logits[m].assign(x.begin(), x.end());
    }
    for (int m = 0; m < kMicros; ++m) {
      std::vector<float> d = dlogits(logits[m].data(), b, m);
      for (size_t k = stages.size(); k-- > 0;) {
        std::vector<float> din(k == 0 ? 0 : stages[k]->input_shape().size() * kMicro);
        stages[k]->backward(static_cast<uint64_t>(m), d, din);
        d = std::move(din);
      }
    }
    const std::vector<float> serial = serial_grads(mo, b);
    for (const auto& s : stages) {
      EXPECT_EQ(s->most_in_flight(), static_cast<size_t>(kMicros));
      EXPECT_EQ(s->in_flight(), 0u);
      for (size_t i = 0; i < s->grads().size(); ++i)
        ASSERT_NEAR(s->grads()[i], serial[s->offset() + i],
                    1e-6f * std::max(1.0f, std::abs(serial[s->offset() + i])))
            << name << " stage [" << s->first() << ", " << s->last() << ") param " << i;
    }
  }
}

// zb's order: B0 B1 W0 B2 W1 B3 W2 W3 against whole backwards in order.
TEST(Stage, ABackwardSplitInTwoMakesTheSameFloatsAsTheWholeOne) {
  for (const char* name : {"mlp", "cnn"}) {
    const ModelOptions mo = small(name);
    auto whole_model = make_model(mo, kSeed), split_model = make_model(mo, kSeed);
    const size_t n = whole_model->layers().size();
    Stage whole(*whole_model, 1, n), split(*split_model, 1, n);
    const size_t in = whole.input_shape().size() * kMicro, out = whole.output_shape().size() * kMicro;
    Rng rng(4);
    std::vector<float> x(in * kMicros), d(out * kMicros);
    for (float& v : x) v = static_cast<float>(rng.normal());
    for (float& v : d) v = static_cast<float>(rng.normal());
    std::vector<float> din_whole(in * kMicros), din_split(in * kMicros);
    for (uint64_t m = 0; m < kMicros; ++m) {
      whole.forward(m, {x.data() + m * in, in}, kMicro);
      split.forward(m, {x.data() + m * in, in}, kMicro);
    }
    for (uint64_t m = 0; m < kMicros; ++m) {
      whole.backward(m, {d.data() + m * out, out}, {din_whole.data() + m * in, in});
      split.backward_input(m, {d.data() + m * out, out}, {din_split.data() + m * in, in});
      EXPECT_THROW(split.backward_input(m, {d.data() + m * out, out}, {}), std::logic_error);
      if (m > 0) split.backward_weights(m - 1);
    }
    EXPECT_THROW(split.backward_weights(kMicros), std::logic_error);
    split.backward_weights(kMicros - 1);
    EXPECT_EQ(split.in_flight(), 0u);
    EXPECT_EQ(din_split, din_whole) << name;
    const std::span<const float> a = whole.grads(), b = split.grads();
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << name;
    EXPECT_GT(split.most_stashed_floats(), whole.most_stashed_floats()) << name;  // the output gradients kept
  }
  auto model = make_model(small("mlp"), kSeed);
  Stage stage(*model, 0, model->layers().size());
  std::vector<float> x(model->input_shape().size() * kMicro, 0.5f);
  stage.forward(0, x, kMicro);
  EXPECT_THROW(stage.backward_weights(0), std::logic_error);  // before its input's gradient
}

TEST(Stage, CountsWhatItsStashesHold) {
  auto model = make_model(small("cnn"), kSeed);
  Stage stage(*model, 0, 3);
  std::vector<float> x(model->input_shape().size() * kMicro, 0.5f);
  stage.forward(7, x, kMicro);
  stage.forward(8, x, kMicro);
  EXPECT_EQ(stage.most_stashed_floats(), 2 * Stage::stash_floats(*model, 0, 3, kMicro));
  EXPECT_THROW(stage.forward(7, x, kMicro), std::logic_error);
  EXPECT_THROW(stage.backward(9, std::vector<float>(stage.output_shape().size() * kMicro), {}),
               std::logic_error);
  stage.backward(7, std::vector<float>(stage.output_shape().size() * kMicro, 1.0f), {});
  stage.forward(9, x, kMicro);
  EXPECT_EQ(stage.most_in_flight(), 2u);
  EXPECT_EQ(stage.in_flight(), 2u);
}

TEST(Stage, WeightStashingRunsBackwardWithTheForwardsWeights) {
  auto model = make_model(small("mlp"), kSeed);
  const Batch b = batch_of(*model, kMicro);
  const size_t n = model->layers().size();
  Stage stashing(*model, 0, n);
  stashing.stash_weights(true);
  const std::span<const float> logits = stashing.forward(0, b.x, kMicro);
  const std::vector<float> d = dlogits(logits.data(), b, 0);
  const std::vector<float> before(stashing.params().begin(), stashing.params().end());
  stashing.keep_weights_in_flight();  // an update between forward and backward
  for (float& w : stashing.params()) w *= 0.5f;
  stashing.forward(1, b.x, kMicro);  // on the updated weights
  stashing.backward(0, d, {});
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(stashing.params()[i], before[i] * 0.5f);

  auto fresh = make_model(small("mlp"), kSeed);
  Stage plain(*fresh, 0, n);
  plain.forward(0, b.x, kMicro);
  plain.backward(0, d, {});
  for (size_t i = 0; i < before.size(); ++i) ASSERT_EQ(stashing.grads()[i], plain.grads()[i]) << i;

  // Micro-batch 1 ran forward after the update: its backward, on the
  // current weights, matches a model holding them.
  stashing.zero_grads();
  stashing.backward(1, d, {});
  for (size_t i = 0; i < before.size(); ++i) fresh->params()[i] = before[i] * 0.5f;
  plain.zero_grads();
  plain.forward(1, b.x, kMicro);
  plain.backward(1, d, {});
  for (size_t i = 0; i < before.size(); ++i) ASSERT_EQ(stashing.grads()[i], plain.grads()[i]) << i;
}

TEST(Stage, RefusesARangeOutsideTheModel) {
  auto model = make_model(small("mlp"), kSeed);
  EXPECT_THROW(Stage(*model, 2, 2), std::invalid_argument);
  EXPECT_THROW(Stage(*model, 0, model->layers().size() + 1), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::trainer
