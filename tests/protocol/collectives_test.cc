// Ring collectives over the real ZeroMQ loopback transport, ranks as threads,
// compared bit for bit with a serial reference on integer-valued inputs.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <tuple>

#include "protocol/collectives/barrier.h"
#include "protocol/collectives/broadcast_ring.h"
#include "protocol/collectives/ring.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol {
namespace {

using testing::TestCluster;

constexpr uint32_t kTag = 7;

using testing::input;
using testing::rank_input;
using testing::serial_sum;

CollectiveOptions test_options() {
  CollectiveOptions o;
  o.timeout = std::chrono::seconds(20);
  o.chunk_bytes = 64 << 10;  // several pieces per block even at 1000 floats x 1
  return o;
}

class RingTest : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(RingTest, AllreduceEqualsSerialSum) {
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const auto n = std::get<0>(GetParam());
  const auto count = std::get<1>(GetParam());
  TestCluster cluster(n);
  const auto expected = serial_sum(n, count);
  std::vector<std::vector<float>> out(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kTag, cluster.ids(), test_options());
    out[r] = rank_input(r, count);
    AllreduceRing(g, out[r]).run();
  }));
  for (size_t r = 0; r < n; ++r) ASSERT_EQ(out[r], expected) << "rank " << r;
}

// A network that reorders and duplicates (injected): every piece still lands
// once, in its place. Loss is the other fault: that is a timeout (failure_test).
TEST(RingUnderFaults, ReorderedAndDuplicatedPiecesStillSumExactly) {
  NodeOptions base;
  base.faults.reorder = 0.3;
  base.faults.duplicate = 0.3;
  constexpr size_t n = 4, count = 100000;
  TestCluster cluster(n, base);
  for (size_t r = 0; r < n; ++r) cluster.node(r).arm_faults();
  const auto expected = serial_sum(n, count);
  std::vector<std::vector<float>> out(n);
  std::atomic<size_t> finished{0};
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kTag, cluster.ids(), test_options());
    for (int rep = 0; rep < 3; ++rep) {
      out[r] = rank_input(r, count);
      AllreduceRing(g, out[r]).run();
    }
    // The injected duplicates of a rank's last pieces may still be on their
    // way when the receiver is done: closing its links with them unread
    // would reset the sender's connection (TCP sends RST) while it waits
    // for its final sends. A real network duplicates nothing, so the
    // groups outlive every rank's last call here.
    ++finished;
    testing::wait_until([&] { return finished.load() == n; }, std::chrono::seconds(20));
  }));
  for (size_t r = 0; r < n; ++r) ASSERT_EQ(out[r], expected) << "rank " << r;
  FaultCounts hit;
  for (size_t r = 0; r < n; ++r) {
    const FaultCounts f = cluster.node(r).fault_counts();
    hit.reordered += f.reordered;
    hit.duplicated += f.duplicated;
  }
  EXPECT_GT(hit.reordered, 10u);
  EXPECT_GT(hit.duplicated, 10u);
}

TEST_P(RingTest, ReduceScatterAndAllgather) {
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const auto n = std::get<0>(GetParam());
  const auto count = std::get<1>(GetParam());
  TestCluster cluster(n);
  const auto expected = serial_sum(n, count);
  std::vector<std::vector<float>> scattered(n), gathered(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kTag, cluster.ids(), test_options());
    scattered[r] = rank_input(r, count);
    ReduceScatterRing(g, scattered[r]).run();
    // Allgather the reduced blocks: the result is the full sum.
    gathered[r] = scattered[r];
    AllgatherRing(g, gathered[r]).run();
  }));
  for (size_t r = 0; r < n; ++r) {
    const BlockRange b = block_range(count, n, r);
    for (size_t i = b.begin; i < b.end; ++i)
      ASSERT_EQ(scattered[r][i], expected[i]) << "rank " << r << " i " << i;
    ASSERT_EQ(gathered[r], expected) << "rank " << r;
  }
}

TEST_P(RingTest, BroadcastFromLastRank) {
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const auto n = std::get<0>(GetParam());
  const auto count = std::get<1>(GetParam());
  TestCluster cluster(n);
  const size_t root = n - 1;
  std::vector<std::vector<float>> out(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kTag, cluster.ids(), test_options());
    out[r] = r == root ? rank_input(root, count) : std::vector<float>(count, -1.0f);
    BroadcastRing(g, out[r], root).run();
  }));
  for (size_t r = 0; r < n; ++r) ASSERT_EQ(out[r], rank_input(root, count)) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(SizesAndCounts, RingTest,
                         ::testing::Combine(::testing::Range<size_t>(1, 9),
                                            ::testing::Values<size_t>(0, 1, 7, 1000, 1 << 20)),
                         [](const auto& p) {
                           return "n" + std::to_string(std::get<0>(p.param)) + "_count" +
                                  std::to_string(std::get<1>(p.param));
                         });

class BarrierTest : public ::testing::TestWithParam<size_t> {};

TEST_P(BarrierTest, NobodyLeavesBeforeEveryoneArrived) {
  const size_t n = GetParam();
  TestCluster cluster(n);
  std::vector<std::atomic<bool>> arrived(n);
  std::atomic<size_t> early_leavers{0};
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kTag, cluster.ids(), test_options());
    // The last rank arrives late (the sleep is the point), so a broken
    // barrier lets the others out.
    if (r == n - 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    arrived[r] = true;
    Barrier(g).run();
    for (size_t i = 0; i < n; ++i) {
      if (!arrived[i]) ++early_leavers;
    }
  }));
  EXPECT_EQ(early_leavers.load(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Sizes, BarrierTest, ::testing::Range<size_t>(1, 9));

// Row and column groups of a 2x2 grid plus the whole world, all at once over
// the same four nodes, several calls each: tags keep their messages apart.
TEST(ConcurrentGroups, RowsColumnsAndWorldSideBySide) {
  TestCluster cluster(4);
  const std::vector<std::vector<std::string>> rows{{"n0", "n1"}, {"n2", "n3"}};
  const std::vector<std::vector<std::string>> cols{{"n0", "n2"}, {"n1", "n3"}};
  constexpr size_t kCount = 100003;
  constexpr int kCalls = 4;
  std::mutex failures_mutex;
  std::vector<std::string> failures;
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Node& node = cluster.node(r);
    const size_t row = r / 2, col = r % 2;
    auto work = [&](uint32_t tag, std::vector<std::string> members, std::vector<size_t> ranks) {
      try {
        Group g(node, tag, members, test_options());
        for (int call = 0; call < kCalls; ++call) {
          std::vector<float> v = rank_input(r + call, kCount);
          AllreduceRing(g, v).run();
          std::vector<float> want(kCount, 0.0f);
          for (size_t m : ranks) {
            for (size_t i = 0; i < kCount; ++i) want[i] += input(m + call, i);
          }
          if (v != want) {
            std::lock_guard lock(failures_mutex);
            failures.push_back("tag " + std::to_string(tag) + " call " + std::to_string(call) + " wrong sum");
          }
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(failures_mutex);
        failures.push_back(e.what());
      }
    };
    std::vector<size_t> row_ranks{row * 2, row * 2 + 1}, col_ranks{col, col + 2};
    std::jthread row_thread(work, 10 + row, rows[row], row_ranks);
    std::jthread col_thread(work, 20 + col, cols[col], col_ranks);
    work(1, cluster.ids(), {0, 1, 2, 3});
  }));
  EXPECT_TRUE(failures.empty()) << failures.front();
}

}  // namespace
}  // namespace gossipd::protocol
