// Compute groups' --robust clip at an owner (daemon/modes/groups/shard_clip.h):
// a push within τ of the shard's reference (the median of the latest
// pushes; zero with two pushers) is applied as it came, a far one at most
// τ beyond it; a pusher far beyond τ round after round,
// or sending NaN, is named — never an honest one, never the owner itself —
// and its pushes are refused from then on.
#include "daemon/modes/groups/shard_clip.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "daemon/modes/groups/shard_store.h"
#include "tests/modes/groups/plain_sgd.h"

namespace gossipd::daemon {
namespace {

std::vector<float> values_of(const ShardStore& store, size_t n) {
  std::vector<float> out(n);
  EXPECT_TRUE(store.read(0, out).has_value());
  return out;
}

// The change a push made to a shard (lr 1, no momentum) and its distance
// from `r` and length along `g − r`.
struct Applied {
  double beyond = 0, along = 0;
};
Applied applied_from(const std::vector<float>& before, const std::vector<float>& after,
                     const std::vector<float>& r, const std::vector<float>& g) {
  double beyond = 0, along = 0, norm = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double applied = double(before[i]) - double(after[i]);
    beyond += (applied - r[i]) * (applied - r[i]);
    along += (applied - r[i]) * (double(g[i]) - r[i]);
    norm += (double(g[i]) - r[i]) * (double(g[i]) - r[i]);
  }
  return {std::sqrt(beyond), along / std::sqrt(norm)};
}

std::vector<float> times(std::vector<float> v, float k) {
  for (float& x : v) x *= k;
  return v;
}

// τ fixed at 1. a's and b's pushes (norms below 1; two pushers, no median
// yet: r = 0) are applied bit for bit as without the defence; c's, ×1000,
// is applied 1 beyond the median of the three latest (b's, coordinate by
// coordinate), towards it.
TEST(ShardClip, APushWithinTauIsAppliedAsItCameAndAFarOneAtMostTauBeyondTheMedianOfTheLatest) {
  ShardStore plain(ShardLayout(4, {"o"}), plain_sgd()), clipped(ShardLayout(4, {"o"}), plain_sgd());
  protocol::ClipSpec fixed;
  fixed.tau = 1.0;
  clipped.defend(fixed, "o");
  for (ShardStore* s : {&plain, &clipped}) {
    s->own({0});
    s->seed(0, std::vector<float>(4, 0.5f), 0);
  }
  const std::vector<float> a{0.1f, -0.2f, 0.3f, 0.05f}, b = times(a, 1.2f), c = times(a, 1000.0f);
  for (ShardStore* s : {&plain, &clipped}) {
    ASSERT_EQ(s->push(ShardPush{"cg0", 1, 0, 1.0f, 0, a, "a"}), PushOutcome::kApplied);
    ASSERT_EQ(s->push(ShardPush{"cg1", 1, 1, 1.0f, 0, b, "b"}), PushOutcome::kApplied);
  }
  EXPECT_EQ(values_of(plain, 4), values_of(clipped, 4)) << "pushes within τ are applied bit for bit";
  EXPECT_EQ(clipped.stats().clipped, 0u);

  const std::vector<float> before = values_of(clipped, 4);
  ASSERT_EQ(clipped.push(ShardPush{"cg2", 1, 2, 1.0f, 0, c, "c"}), PushOutcome::kApplied);
  const Applied x = applied_from(before, values_of(clipped, 4), b, c);
  EXPECT_NEAR(x.beyond, 1.0, 1e-5) << "clipped to τ around the median";
  EXPECT_NEAR(x.along, 1.0, 1e-5) << "towards the push";
  EXPECT_EQ(clipped.stats().clipped, 1u);
}

// The median without a sort (3 and 4 rows) and with one (the rest) against
// each column sorted, on columns with many ties.
TEST(ShardClip, TheCoordinateMedianIsTheMiddleOfEachSortedColumn) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> value(-4, 4);  // few values: many ties
  for (size_t m = 1; m <= 7; ++m) {
    constexpr size_t kN = 257;
    std::vector<std::vector<float>> rows(m, std::vector<float>(kN));
    for (auto& row : rows)
      for (float& v : row) v = static_cast<float>(value(rng)) * 0.5f;
    std::vector<const float*> take;
    for (const auto& row : rows) take.push_back(row.data());
    std::vector<float> out(kN);
    coordinate_median(take, out);
    for (size_t i = 0; i < kN; ++i) {
      std::vector<float> column;
      for (const auto& row : rows) column.push_back(row[i]);
      std::sort(column.begin(), column.end());
      const float want = m % 2 ? column[m / 2] : 0.5f * (column[m / 2 - 1] + column[m / 2]);
      ASSERT_EQ(out[i], want) << m << " rows, column " << i;
    }
  }
}

// τ fixed at 1 on owner "o" of shard 0, seeded with 0.5s.
void defended_at_tau_one(ShardStore& store) {
  protocol::ClipSpec fixed;
  fixed.tau = 1.0;
  store.defend(fixed, "o");
  store.own({0});
  store.seed(0, std::vector<float>(4, 0.5f), 0);
}

// Two pushers of a shard: no majority to take a median of, the norm is clipped.
TEST(ShardClip, WithTwoPushersOfAShardTheNormIsClipped) {
  ShardStore store(ShardLayout(4, {"o"}), plain_sgd());
  defended_at_tau_one(store);
  const std::vector<float> a{0.1f, -0.2f, 0.3f, 0.05f}, b = times(a, -1000.0f), zero(4, 0.0f);
  store.push(ShardPush{"cg0", 1, 0, 1.0f, 0, a, "a"});
  const std::vector<float> before = values_of(store, 4);
  store.push(ShardPush{"cg1", 1, 1, 1.0f, 0, b, "b"});
  const Applied x = applied_from(before, values_of(store, 4), zero, b);
  EXPECT_NEAR(x.beyond, 1.0, 1e-5);
  EXPECT_NEAR(x.along, 1.0, 1e-5);
}

// A shard the view moves away takes its pushers' latest pushes with it:
// when it comes back, the reference starts again from no pushers (r = 0,
// the norm clipped), not from the median of pushes it held before.
TEST(ShardClip, AShardThatMovesAwayTakesItsPushersLatestPushesWithIt) {
  ShardStore store(ShardLayout(4, {"o"}), plain_sgd());
  defended_at_tau_one(store);
  const std::vector<float> v{10.0f, 0.0f, 0.0f, 0.0f};  // norm 10: far from 0, near the others
  for (uint64_t k = 0; k < 4; ++k)
    ASSERT_EQ(store.push(ShardPush{"cg" + std::to_string(k), 1, k, 1.0f, 0, v, "p" + std::to_string(k)}),
              PushOutcome::kApplied);
  EXPECT_EQ(store.stats().clipped, 2u) << "the first two against r = 0; the third and fourth at the median";
  store.own({});
  store.own({0});
  store.seed(0, std::vector<float>(4, 0.5f), 0);
  ASSERT_EQ(store.push(ShardPush{"cg0", 2, 0, 1.0f, 0, v, "p0"}), PushOutcome::kApplied);
  EXPECT_EQ(store.stats().clipped, 3u) << "one pusher again: r = 0";
}

// Four pushers a round on one shard: two honest members (their gradients
// one shared direction plus noise), the owner's own group, and c sending
// them ×1000; d's pushes are refused as NaN before they get here. Adaptive
// τ. c and d are named within the rounds the owner allows (8 distances,
// then 10 far rounds), a, b and the owner never; c's next push is refused
// and leaves the shard as it was.
TEST(ShardClip, AScaledPusherAndANonFiniteOneAreNamedAndRefusedTheHonestAndTheOwnerNever) {
  constexpr size_t kN = 64;
  ShardStore store(ShardLayout(kN, {"o"}), plain_sgd());
  store.defend(protocol::ClipSpec{}, "o");
  store.own({0});
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  std::vector<float> start(kN);
  for (float& v : start) v = noise(rng) * 10;
  store.seed(0, start, 0);
  std::vector<float> direction(kN);
  for (float& v : direction) v = noise(rng);
  auto honest = [&] {
    std::vector<float> g(direction);
    for (float& v : g) v += noise(rng);
    return g;
  };
  std::vector<std::string> named;
  uint64_t version = 0;
  for (uint64_t step = 1; step <= 16; ++step) {
    for (const auto& [group, from] : std::vector<std::pair<std::string, std::string>>{
             {"cg0", "a"}, {"cg1", "b"}, {"cg2", "o"}, {"cg3", "c"}}) {
      std::vector<float> g = honest();
      if (from == "c")
        for (float& v : g) v *= 1000;
      store.push(ShardPush{group, step, version++, 0.01f, 0, g, from});
    }
    store.refused("d");
    for (const std::string& n : store.end_round()) named.push_back(n + "@" + std::to_string(step));
  }
  ASSERT_EQ(named.size(), 2u) << testing::PrintToString(named);
  for (const std::string& n : named) {
    EXPECT_TRUE(n.starts_with("c@") || n.starts_with("d@")) << n;
    EXPECT_LE(std::stoi(n.substr(2)), 12) << n << ": named later than 2 rounds of history and 10 far";
  }
  const auto pushers = store.pushers();
  EXPECT_FALSE(pushers.contains("o")) << "the owner does not judge itself";
  EXPECT_FALSE(pushers.at("a").named);
  EXPECT_FALSE(pushers.at("b").named);
  EXPECT_TRUE(pushers.at("c").named);
  EXPECT_GT(pushers.at("c").clipped, 0u);
  EXPECT_EQ(pushers.at("d").refused, 16u);

  const uint64_t refused = store.stats().refused;
  EXPECT_GT(refused, 0u) << "c's pushes after its naming were applied";
  const std::vector<float> before = values_of(store, kN);
  std::vector<float> g = honest();
  for (float& v : g) v *= 1000;
  EXPECT_EQ(store.push(ShardPush{"cg3", 17, version, 0.01f, 0, g, "c"}), PushOutcome::kRefused);
  EXPECT_EQ(values_of(store, kN), before) << "a named pusher's push changed the shard";
  EXPECT_EQ(store.stats().refused, refused + 1);
  EXPECT_EQ(store.push(ShardPush{"cg3", 17, version, 0.01f, 0, g, "c"}), PushOutcome::kDuplicate)
      << "a refused step is still the group's last";
}

}  // namespace
}  // namespace gossipd::daemon
