// Compute groups' parameter shards, in one process: the layout, an owner's
// store (each group's step applied once, repeats answered, the rest refused
// and counted, staleness, seeding after an owner left) and the momentum fit
// that lines each gradient up with the model it was computed on.
#include "daemon/modes/groups/shard_store.h"

#include <gtest/gtest.h>

#include <vector>

#include "daemon/modes/groups/momentum_lineup.h"
#include "daemon/modes/groups/shard_layout.h"
#include "tests/modes/groups/plain_sgd.h"

namespace gossipd::daemon {
namespace {

TEST(ShardLayout, ShardsTileTheParametersAndMoveOnlyWhenTheirOwnerLeaves) {
  const ShardLayout layout(10, {"w2", "w0", "w3", "w1"});
  size_t at = 0;
  for (size_t j = 0; j < layout.count(); ++j) {
    EXPECT_EQ(layout.range(j).begin, at);
    at = layout.range(j).end;
  }
  EXPECT_EQ(at, 10u);
  const std::vector<std::string> all{"w0", "w1", "w2", "w3"};
  for (size_t j = 0; j < 4; ++j) EXPECT_EQ(layout.owner(j, all), all[j]);
  const std::vector<std::string> without_w1{"w0", "w2", "w3"};
  EXPECT_EQ(layout.owner(0, without_w1), "w0");
  EXPECT_EQ(layout.owner(1, without_w1), "w2");  // alive[1 % 3]
  EXPECT_EQ(layout.owner(2, without_w1), "w2");
  EXPECT_EQ(layout.owned_by("w2", without_w1), (std::vector<size_t>{1, 2}));
  // A group of 3 splits the 4 shards in order; its counts add up to the parameters.
  EXPECT_EQ(layout.slice(0, 3), (std::pair<size_t, size_t>{0, 2}));
  EXPECT_EQ(layout.slice(2, 3), (std::pair<size_t, size_t>{3, 4}));
  const auto counts = layout.slice_counts(3);
  EXPECT_EQ(counts[0] + counts[1] + counts[2], 10u);
  EXPECT_THROW(ShardLayout(3, all), std::invalid_argument);
}

TEST(ShardStore, EachGroupsStepIsAppliedOnceAndTheRestIsRefusedAndCounted) {
  ShardStore store(ShardLayout(8, {"a", "b"}), plain_sgd());
  store.own({1});
  const std::vector<float> grad(4, 1.0f), wrong(3, 1.0f);
  ShardPush p{"cg0", 1, 0, 0.5f, 1, grad};
  EXPECT_EQ(store.push(p), PushOutcome::kUnseeded);
  const std::vector<float> start(4, 2.0f);
  EXPECT_TRUE(store.seed(1, start, 0));
  EXPECT_FALSE(store.seed(1, std::vector<float>(4, 9.0f), 0)) << "the first seed wins";
  EXPECT_EQ(store.push(p), PushOutcome::kApplied);
  EXPECT_EQ(store.push(p), PushOutcome::kDuplicate);
  p.step = 0;
  EXPECT_EQ(store.push(p), PushOutcome::kDuplicate) << "an older step of the same group";
  p.group = "cg1";  // another group's step 1 is its own
  p.step = 1;
  EXPECT_EQ(store.push(p), PushOutcome::kApplied);
  EXPECT_EQ(store.push(ShardPush{"cg0", 2, 0, 0.5f, 0, grad}), PushOutcome::kNotOwned);
  EXPECT_EQ(store.push(ShardPush{"cg0", 2, 0, 0.5f, 1, wrong}), PushOutcome::kMisSized);
  std::vector<float> out(4);
  EXPECT_EQ(store.read(1, out), 2u);  // two updates applied
  for (float v : out) EXPECT_FLOAT_EQ(v, 2.0f - 2 * 0.5f);
  const ShardStats x = store.stats();
  EXPECT_EQ(x.applied, 2u);
  EXPECT_EQ(x.duplicate, 2u);
  EXPECT_EQ(x.not_owned, 1u);
  EXPECT_EQ(x.mis_sized, 1u);
  EXPECT_EQ(x.seeded_later, 0u) << "version 0 is the start's values";
  EXPECT_EQ(x.owned, (std::vector<uint32_t>{1}));
}

TEST(ShardStore, StalenessCountsTheOtherGroupsUpdatesBetweenPullAndPush) {
  ShardStore store(ShardLayout(4, {"a"}), plain_sgd());
  store.own({0});
  store.seed(0, std::vector<float>(4, 0.0f), 0);
  const std::vector<float> grad(4, 1.0f);
  // Three groups pull version 0; they push in turn: τ = 0, 1, 2.
  for (uint64_t g = 0; g < 3; ++g) store.push(ShardPush{"cg" + std::to_string(g), 1, 0, 0.1f, 0, grad});
  // Group 0 pulled version 1 (its own answer); two updates came since.
  store.push(ShardPush{"cg0", 2, 1, 0.1f, 0, grad});
  const ShardStats x = store.stats();
  EXPECT_EQ(x.staleness[0], 1u);
  EXPECT_EQ(x.staleness[1], 1u);
  EXPECT_EQ(x.staleness[2], 2u);
  EXPECT_DOUBLE_EQ(x.staleness_mean(), (0 + 1 + 2 + 2) / 4.0);
  EXPECT_EQ(x.staleness_max, 2u);
}

TEST(ShardStore, ASeedOlderThanWhatAGroupPulledCountsTheUpdatesLost) {
  ShardStore store(ShardLayout(4, {"a", "b"}), plain_sgd());
  store.own({0, 1});
  // b left; a group seeds b's shard with its copy of version 5, another group had pulled version 7.
  ASSERT_TRUE(store.seed(1, std::vector<float>(2, 1.0f), 5));
  EXPECT_EQ(store.push(ShardPush{"cg1", 9, 7, 0.1f, 1, std::vector<float>(2, 0.0f)}), PushOutcome::kApplied);
  const ShardStats x = store.stats();
  EXPECT_EQ(x.seeded_later, 1u);
  EXPECT_EQ(x.lost, 2u);
  std::vector<float> out(2);
  EXPECT_EQ(store.read(1, out), 8u);
}

TEST(ShardStore, MomentumIsTheOwnersAndKeptPerShard) {
  trainer::OptimizerOptions o;
  o.momentum = 0.5f;
  ShardStore store(ShardLayout(2, {"a"}), o);
  store.own({0});
  store.seed(0, std::vector<float>(2, 0.0f), 0);
  const std::vector<float> grad(2, 1.0f);
  store.push(ShardPush{"cg0", 1, 0, 1.0f, 0, grad});  // v = 1, w = -1
  store.push(ShardPush{"cg0", 2, 1, 1.0f, 0, grad});  // v = 1.5, w = -2.5
  std::vector<float> out(2);
  store.read(0, out);
  EXPECT_FLOAT_EQ(out[0], -2.5f);
  store.set_momentum(0.0f);
  EXPECT_FLOAT_EQ(store.momentum(), 0.0f);
}

// On f(w) = Σ c_i w_i²/2 (curvatures unlike, so the last update and the
// gradient are not parallel) with momentum m and every gradient fresh, the
// fit is m; the same when each push is applied and lined up in two halves,
// as an owner does to answer before it lines up (apply_only, line_up), and
// when only every eighth version is lined up (the default).
TEST(MomentumLineup, FitsThePlainMomentumOfFreshGradients) {
  for (const size_t every : {size_t{1}, MomentumLineup::kEvery}) {
    for (const bool halves : {false, true}) {
      for (const float m : {0.0f, 0.3f, 0.9f}) {
        trainer::OptimizerOptions o;
        o.momentum = m;
        constexpr size_t kN = 7;  // a whole group of four lanes and a tail
        ShardStore store(ShardLayout(kN, {"a"}), o, every);
        store.own({0});
        store.seed(0, std::vector<float>{1.0f, -2.0f, 0.5f, 0.7f, -1.1f, 0.3f, 2.0f}, 0);
        const float c[kN] = {1.0f, 3.0f, 0.2f, 0.5f, 2.0f, 1.5f, 0.1f};
        std::vector<float> w(kN), grad(kN);
        for (uint64_t step = 1; step <= 30; ++step) {
          const uint64_t version = *store.read(0, w);
          for (size_t i = 0; i < kN; ++i) grad[i] = c[i] * w[i];
          const ShardPush push{"cg0", step, version, 0.05f, 0, grad};
          if (!halves) {
            ASSERT_EQ(store.push(push), PushOutcome::kApplied);
            continue;
          }
          ASSERT_EQ(store.apply_only(push), PushOutcome::kApplied);
          store.line_up(push);
        }
        const auto mu = store.stats().fit.momentum();
        ASSERT_TRUE(mu.has_value()) << m;
        EXPECT_NEAR(*mu, m, 1e-3) << m << (halves ? " in halves" : "") << ", every " << every;
        // Versions 1..29 every one, else 8, 16 and 24.
        EXPECT_EQ(store.stats().fit.lined_up, every == 1 ? 29u : 3u) << "every " << every;
      }
    }
  }
}

}  // namespace
}  // namespace gossipd::daemon
