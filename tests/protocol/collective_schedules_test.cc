// The butterfly schedules (recursive halving reduce-scatter, recursive
// doubling allgather, Rabenseifner's allreduce) and the choosers the modes
// call (Allreduce, ReduceScatter, Allgather), bit for bit against serial
// references on integer-valued inputs: even and uneven blocks, both data
// paths, sizes on both sides of every threshold, and duplicated, reordered,
// delayed frames landing in posted receives.
#include <gtest/gtest.h>

#include <numeric>
#include <tuple>

#include "protocol/collectives/butterfly.h"
#include "protocol/collectives/collectives.h"
#include "protocol/wire/errors.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol {
namespace {

using testing::on_path;
using testing::rank_input;
using testing::serial_sum;
using testing::small_pieces;
using testing::TestCluster;

constexpr uint32_t kScheduleTag = 11;

size_t offset_of(std::span<const size_t> counts, size_t rank) {
  return std::accumulate(counts.begin(), counts.begin() + static_cast<long>(rank), size_t{0});
}

// Reduce-scatter, allgather of its result, then Rabenseifner's allreduce on
// fresh inputs: each rank's block, the gathered buffer and the allreduce
// must be the serial sums. `counts` empty: even blocks.
void expect_butterflies_exact(TestCluster& cluster, size_t count, std::span<const size_t> counts) {
  const size_t n = cluster.ids().size();
  const auto expected = serial_sum(n, count);
  const auto expected_again = serial_sum(n, count, 1);
  std::vector<std::vector<float>> scattered(n), gathered(n), reduced(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kScheduleTag, cluster.ids(), small_pieces());
    scattered[r] = rank_input(r, count);
    Butterfly(g, scattered[r], Butterfly::Kind::kReduceScatter, counts).run();
    gathered[r] = scattered[r];
    Butterfly(g, gathered[r], Butterfly::Kind::kAllgather, counts).run();
    reduced[r] = rank_input(r, count, 1);
    if (counts.empty()) {
      AllreduceButterfly(g, reduced[r]).run();
    }
  }));
  for (size_t r = 0; r < n; ++r) {
    const BlockRange own = counts.empty() ? block_range(count, n, r)
                                          : BlockRange{offset_of(counts, r), offset_of(counts, r + 1)};
    for (size_t i = own.begin; i < own.end; ++i) {
      ASSERT_EQ(scattered[r][i], expected[i]) << "rank " << r;
    }
    ASSERT_EQ(gathered[r], expected) << "rank " << r;
    if (counts.empty()) {
      ASSERT_EQ(reduced[r], expected_again) << "rank " << r;
    }
  }
}

class ButterflyTest : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(ButterflyTest, ReduceScatterAllgatherAndAllreduceEqualSerialSums) {
  TestCluster cluster(std::get<0>(GetParam()));
  expect_butterflies_exact(cluster, std::get<1>(GetParam()), {});
}

INSTANTIATE_TEST_SUITE_P(PowersOfTwo, ButterflyTest,
                         ::testing::Combine(::testing::Values<size_t>(1, 2, 4, 8),
                                            ::testing::Values<size_t>(0, 1, 7, 1000, 100003)));

class ButterflyPathTest : public ::testing::TestWithParam<DataPath> {};

TEST_P(ButterflyPathTest, UnevenBlocksSomeEmptyEqualSerialSums) {
  const std::vector<size_t> counts{5, 0, 3000, 3};
  TestCluster cluster(counts.size(), on_path(GetParam()));
  expect_butterflies_exact(cluster, std::accumulate(counts.begin(), counts.end(), size_t{0}), counts);
}

TEST_P(ButterflyPathTest, EvenBlocksEqualSerialSums) {
  TestCluster cluster(4, on_path(GetParam()));
  expect_butterflies_exact(cluster, 20011, {});
}

INSTANTIATE_TEST_SUITE_P(BothPaths, ButterflyPathTest, ::testing::Values(DataPath::kTcp, DataPath::kZmq));

TEST(Butterfly, RefusesAGroupThatIsNotAPowerOfTwoAndCountsThatDoNotFit) {
  TestCluster cluster(3);
  Group g(cluster.node(0), kScheduleTag, cluster.ids(), small_pieces());
  std::vector<float> v(10);
  EXPECT_THROW(Butterfly(g, v, Butterfly::Kind::kAllgather), ProtocolConfigError);
  TestCluster two(2);
  Group g2(two.node(0), kScheduleTag, two.ids(), small_pieces());
  const std::vector<size_t> short_counts{4, 5};
  EXPECT_THROW(Butterfly(g2, v, Butterfly::Kind::kReduceScatter, short_counts), ProtocolConfigError);
}

// Around each threshold, on a power-of-two group and on one that is not:
// whichever schedule the chooser takes, the sums are exact.
TEST(Choosers, EqualSerialSumsOnBothSidesOfEveryThreshold) {
  const size_t sizes[] = {10, kDoublingMaxBytes / sizeof(float) + 1, kButterflyMaxBytes / sizeof(float),
                          kButterflyMaxBytes / sizeof(float) + 4};
  for (size_t n : {3, 4}) {
    TestCluster cluster(n);
    for (size_t count : sizes) {
      SCOPED_TRACE(std::to_string(n) + " ranks, " + std::to_string(count) + " floats");
      const auto expected = serial_sum(n, count);
      std::vector<std::vector<float>> summed(n), scattered(n), gathered(n);
      testing::expect_no_errors(cluster.run([&](size_t r) {
        CollectiveOptions o = small_pieces();
        o.chunk_bytes = 256 << 10;
        Group g(cluster.node(r), kScheduleTag, cluster.ids(), o);
        summed[r] = rank_input(r, count);
        Allreduce(g, summed[r]).run();
        scattered[r] = rank_input(r, count);
        ReduceScatter(g, scattered[r]).run();
        gathered[r] = scattered[r];
        Allgather(g, gathered[r]).run();
      }));
      for (size_t r = 0; r < n; ++r) {
        ASSERT_EQ(summed[r], expected) << "rank " << r;
        ASSERT_EQ(gathered[r], expected) << "rank " << r;
      }
    }
  }
}

// Duplicated, reordered and delayed frames: a posted receive takes the
// first copy of its piece, the duplicate is dropped as stale, nothing is
// added twice.
TEST(Butterfly, ExactUnderDuplicatedAndReorderedFrames) {
  constexpr size_t kRanks = 4, kCount = 30011, kCalls = 4;
  NodeOptions base;
  base.faults.delay = std::chrono::milliseconds(1);
  base.faults.duplicate = 0.3;
  base.faults.reorder = 0.3;
  TestCluster cluster(kRanks, base);
  std::vector<int> wrong(kRanks, 0);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kScheduleTag, cluster.ids(), small_pieces());
    std::vector<float> v = rank_input(r, kCount);
    AllreduceButterfly(g, v).run();  // makes the connections unarmed
    cluster.node(r).arm_faults();
    for (size_t call = 1; call <= kCalls; ++call) {
      v = rank_input(r, kCount, call);
      AllreduceButterfly(g, v).run();
      if (v != serial_sum(kRanks, kCount, call)) ++wrong[r];
    }
  }));
  EXPECT_EQ(wrong, std::vector<int>(kRanks, 0));
  uint64_t duplicated = 0, stale = 0;
  for (size_t r = 0; r < kRanks; ++r) {
    duplicated += cluster.node(r).fault_counts().duplicated;
    stale += cluster.node(r).counters().get(RejectReason::kStale);
  }
  EXPECT_GE(duplicated, 10u);
  EXPECT_GT(stale, 0u);
  EXPECT_LE(stale, duplicated);
}

}  // namespace
}  // namespace gossipd::protocol
