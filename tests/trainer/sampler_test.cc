#include "trainer/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

namespace gossipd::trainer {
namespace {

std::vector<uint32_t> epoch_order(BatchSampler& s, uint32_t epoch, size_t batch) {
  s.start_epoch(epoch);
  std::vector<uint32_t> out;
  for (auto b = s.next_batch(batch); !b.empty(); b = s.next_batch(batch)) {
    EXPECT_LE(b.size(), batch);
    out.insert(out.end(), b.begin(), b.end());
  }
  return out;
}

TEST(Sampler, ShardsAreDisjointAndCoverEverything) {
  const size_t n = 1001;
  std::set<uint32_t> seen;
  size_t total = 0;
  for (int w = 0; w < 3; ++w) {
    BatchSampler s(n, {7, w, 3, SamplingMode::kShard});
    auto order = epoch_order(s, 0, 32);
    EXPECT_EQ(order.size(), s.samples_per_epoch());
    EXPECT_EQ(s.batches_per_epoch(32), (order.size() + 31) / 32);
    total += order.size();
    for (auto i : order) EXPECT_TRUE(seen.insert(i).second) << "sample " << i << " in two shards";
  }
  EXPECT_EQ(total, n);
  EXPECT_EQ(seen.size(), n);
}

TEST(Sampler, EpochsReshuffleTheSameShardDeterministically) {
  BatchSampler a(500, {3, 1, 2, SamplingMode::kShard});
  BatchSampler b(500, {3, 1, 2, SamplingMode::kShard});
  auto a0 = epoch_order(a, 0, 10);
  auto a1 = epoch_order(a, 1, 10);
  EXPECT_EQ(a0, epoch_order(b, 0, 10));
  EXPECT_NE(a0, a1);
  std::sort(a0.begin(), a0.end());
  std::sort(a1.begin(), a1.end());
  EXPECT_EQ(a0, a1);
  BatchSampler other_seed(500, {4, 1, 2, SamplingMode::kShard});
  auto c = epoch_order(other_seed, 0, 10);
  std::sort(c.begin(), c.end());
  EXPECT_NE(a0, c);
}

TEST(Sampler, RandomModeDrawsInRangePerWorkerStreams) {
  BatchSampler w0(100, {5, 0, 4, SamplingMode::kRandom});
  BatchSampler w0b(100, {5, 0, 4, SamplingMode::kRandom});
  BatchSampler w1(100, {5, 1, 4, SamplingMode::kRandom});
  auto a = epoch_order(w0, 2, 8);
  EXPECT_EQ(a.size(), 25u);
  for (auto i : a) EXPECT_LT(i, 100u);
  EXPECT_EQ(a, epoch_order(w0b, 2, 8));
  EXPECT_NE(a, epoch_order(w1, 2, 8));
}

TEST(Sampler, RejectsBadWorkerIndex) {
  EXPECT_THROW(BatchSampler(10, {1, 3, 3, SamplingMode::kShard}), std::invalid_argument);
  EXPECT_THROW(BatchSampler(10, {1, 0, 0, SamplingMode::kShard}), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::trainer
