// A member whose replica holds NaN and infinities (a diverged learning
// rate, failing memory) gossips them in every codec: each other member
// refuses those segments (RejectReason::kNonFinite), holds them against that
// member and no one else, skips them as lost ones, and its replica stays
// finite. Hierarchical Crossover-SGD's group average and share are sums
// that do not say who sent a NaN: the member's group mates keep their own
// values where one comes out (counted, held against no one). Over the real
// ZeroMQ loopback transport, ranks as threads.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "protocol/collectives/segment_inbox.h"
#include "protocol/gossip/crossover.h"
#include "protocol/gossip/push_sum.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol::non_finite {
namespace {

using testing::TestCluster;

const SegmentTable kTable{{0, 300}, {300, 500}, {800, 1}, {801, 199}};
constexpr size_t kValues = 1000;
constexpr size_t kBad = 3;  // the rank whose replica is not finite

// A replica of rank `rank`: the bad one NaN at even indices, +inf and -inf
// at odd ones (every segment holds some); the others finite.
std::vector<float> replica(size_t rank) {
  std::mt19937 gen(static_cast<unsigned>(rank * 101 + 7));
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(kValues);
  for (size_t i = 0; i < kValues; ++i) {
    x[i] = d(gen);
    if (rank == kBad) x[i] = i % 2 == 0 ? std::nanf("") : (i % 4 == 1 ? INFINITY : -INFINITY);
  }
  return x;
}

enum class Kind { kCrossover, kSgp, kOsgp, kHierarchical };

// Hierarchical: testing::parity_groups (kBad's group mate is rank 1).

class NonFiniteSegments : public ::testing::TestWithParam<std::tuple<Kind, Codec>> {};

TEST_P(NonFiniteSegments, AreRefusedHeldAgainstTheirSenderAndNoOtherReplicaTakesThem) {
  const auto kind = std::get<0>(GetParam());
  const auto codec = std::get<1>(GetParam());
  constexpr size_t n = 4;
  constexpr uint64_t kRounds = 6;
  TestCluster cluster(n);
  for (size_t i = 0; i < n; ++i) register_segments(cluster.node(i), kTable);
  const topology::View view(1, cluster.ids());
  GossipOptions opts;
  opts.seed = 5;
  // A hang guard: a refused segment is skipped at once, not at the deadline.
  opts.segment_deadline = std::chrono::milliseconds(20000);
  opts.codec = CodecSpec{codec, 64};
  std::vector<std::vector<float>> result(n);
  std::vector<RoundStats> stats(n);
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    auto x = replica(rank);
    Node& node = cluster.node(rank);
    if (kind == Kind::kCrossover) {
      CrossoverGossip g(node, kTable, opts);
      for (uint64_t r = 0; r < kRounds; ++r) stats[rank] += g.run_round(view, r, x);
    } else if (kind == Kind::kHierarchical) {
      HierarchicalCrossover g(node, kTable, opts);
      for (uint64_t r = 1; r <= kRounds; ++r)
        stats[rank] += g.run_round(view, testing::parity_groups(view), r, x);
    } else {
      PushSumGossip g(node, kTable, opts, 1, kind == Kind::kOsgp);
      for (uint64_t r = 1; r <= kRounds; ++r) stats[rank] += g.run_round(view, r, x);
    }
    result[rank] = x;
  }));
  const std::string bad = cluster.node(kBad).id();
  uint64_t refused = 0;
  for (size_t r = 0; r < n; ++r) {
    if (r == kBad) continue;
    for (size_t i = 0; i < kValues; ++i)
      ASSERT_TRUE(std::isfinite(result[r][i])) << "rank " << r << " [" << i << "]";
    const auto against = cluster.node(r).counters().against();
    for (const auto& [peer, count] : against)
      EXPECT_EQ(peer, bad) << "rank " << r << " blamed an honest member";
    const uint64_t mine = against.contains(bad) ? against.at(bad) : 0;
    EXPECT_EQ(cluster.node(r).counters().get(RejectReason::kNonFinite), mine) << "rank " << r;
    // Nothing else is lost here: every skipped segment is a refused one.
    EXPECT_EQ(stats[r].segments_skipped, mine) << "rank " << r;
    refused += mine;
    // Its group mate's first average holds NaN in every element (kBad's
    // are all non-finite); the other group's collectives none.
    const bool mate = kind == Kind::kHierarchical && r % 2 == kBad % 2;
    if (mate) {
      EXPECT_GE(stats[r].values_refused, kValues) << "rank " << r;
    } else {
      EXPECT_EQ(stats[r].values_refused, 0u) << "rank " << r;
    }
  }
  EXPECT_GT(refused, 0u) << "the topology routed no segment of the bad member to another";
  EXPECT_TRUE(cluster.node(kBad).counters().against().empty()) << "the honest members' segments are finite";
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Kind, Codec>>& info) {
  static const std::map<Kind, std::string> kNames{{Kind::kCrossover, "Crossover"},
                                                  {Kind::kSgp, "Sgp"},
                                                  {Kind::kOsgp, "Osgp"},
                                                  {Kind::kHierarchical, "Hierarchical"}};
  return kNames.at(std::get<0>(info.param)) + "_" + codec_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Protocols, NonFiniteSegments,
                         ::testing::Combine(::testing::Values(Kind::kCrossover, Kind::kSgp, Kind::kOsgp,
                                                              Kind::kHierarchical),
                                            ::testing::Values(Codec::kNone, Codec::kFp16, Codec::kBf16)),
                         case_name);

TEST(AllFinite, FindsOneNanOrInfinityAnywhereAndIgnoresATrailingPartialValue) {
  std::vector<float> x(1003, 1.5f);
  const auto bytes = [&] { return std::as_bytes(std::span<const float>(x)); };
  EXPECT_TRUE(all_finite(bytes()));
  for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
    for (size_t at : {size_t{0}, size_t{500}, x.size() - 1}) {
      x[at] = bad;
      EXPECT_FALSE(all_finite(bytes())) << at;
      x[at] = 1.5f;
    }
  }
  x[7] = 3.4e38f;  // the largest finite values and the smallest are finite
  x[8] = -1e-45f;
  EXPECT_TRUE(all_finite(bytes()));
  x[1] = std::nanf("");
  EXPECT_FALSE(all_finite(bytes().first(8)));
  EXPECT_TRUE(all_finite(bytes().first(7))) << "bytes past the last whole float are not read";
}

}  // namespace
}  // namespace gossipd::protocol::non_finite
