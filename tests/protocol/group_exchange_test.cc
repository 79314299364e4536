// AsyncGroupExchange: each owner of a segment gets the other group's newest
// copy of it, with no lockstep and without waiting, and refuses copies that
// are not its own segments whole.
#include "protocol/group_exchange.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "protocol/segment_inbox.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol {
namespace {

using namespace std::chrono_literals;
using testing::TestCluster;
using testing::wait_until;

const SegmentTable kGroupSegments{{0, 300}, {300, 500}, {800, 1}, {801, 199}};
constexpr size_t kModelFloats = 1000;

struct TwoGroups {
  TestCluster cluster{4};
  topology::View view{1, cluster.ids()};
  std::map<std::string, std::string> labels{{"n0", "A"}, {"n1", "A"}, {"n2", "B"}, {"n3", "B"}};
  std::vector<std::unique_ptr<AsyncGroupExchange>> exchanges;
  TwoGroups() {
    for (size_t i = 0; i < 4; ++i) register_segments(cluster.node(i), kGroupSegments);
    for (size_t i = 0; i < 4; ++i) {
      GossipOptions o;
      o.seed = 3;
      o.segment_deadline = 2000ms;
      exchanges.push_back(std::make_unique<AsyncGroupExchange>(cluster.node(i), kGroupSegments, o));
    }
  }
  // Offers `value` everywhere at `step`, once each exchange is idle.
  void offer_all(float value, uint64_t step) {
    const std::vector<float> params(kModelFloats, value);
    for (auto& x : exchanges) {
      ASSERT_TRUE(wait_until([&] { return x->offer(view, labels, step, params); }, 10s));
    }
  }
  // What `rank` has taken once every segment it owns has arrived from `step` on.
  std::map<uint32_t, FoldIn> newest(size_t rank, uint64_t step) {
    std::map<uint32_t, FoldIn> got;
    EXPECT_TRUE(wait_until(
        [&] {
          for (auto& f : exchanges[rank]->take()) got.insert_or_assign(f.segment, std::move(f));
          return got.size() == 2 && got.begin()->second.sender_step >= step &&
                 got.rbegin()->second.sender_step >= step;
        },
        10s));
    return got;
  }
};

TEST(AsyncGroupExchange, EachOwnerGetsTheOtherGroupsNewestCopyWithoutWaiting) {
  TwoGroups g;
  const auto before = std::chrono::steady_clock::now();
  EXPECT_TRUE(g.exchanges[0]->take().empty());
  EXPECT_LT(std::chrono::steady_clock::now() - before, 100ms) << "take waited";
  g.offer_all(1.0f, 10);
  g.offer_all(2.0f, 20);  // before the first copies are taken: only the newest is kept
  // Spread ownership: n0 and n2 own segments 0 and 2, n1 and n3 segments 1 and 3.
  for (size_t rank = 0; rank < 4; ++rank) {
    const auto got = g.newest(rank, 20);
    ASSERT_EQ(got.size(), 2u) << "rank " << rank;
    for (const auto& [s, f] : got) {
      EXPECT_EQ(s % 2, rank % 2) << "rank " << rank << " got a segment it does not own";
      EXPECT_EQ(f.values.size(), kGroupSegments[s].length);
      EXPECT_EQ(f.sender_step, 20u);
      EXPECT_EQ(f.values.front(), 2.0f);
    }
  }
  EXPECT_EQ(g.exchanges[0]->stats().segments_sent, 4u);  // 2 segments x 2 rounds
  EXPECT_EQ(g.exchanges[0]->rounds(), 2u);
}

TEST(AsyncGroupExchange, ACopyOfAnotherOwnersSegmentOrMisSizedIsRefusedAndCounted) {
  TwoGroups g;
  g.offer_all(1.0f, 5);  // n0 learns the view: it owns segments 0 and 2
  const std::vector<float> junk(500, 9.0f);
  SegmentInbox from_n2(g.cluster.node(2), AsyncGroupExchange::kTag, 1000, /*finish=*/false);
  ASSERT_GT(from_n2.send("n0", 1, junk, std::nullopt, 1s, 99), 0u);  // n1's segment
  ASSERT_GT(from_n2.send("n0", 0, std::span<const float>(junk).first(7), std::nullopt, 1s, 99), 0u);
  auto& rejects = g.cluster.node(0).reject_log().counters();
  EXPECT_TRUE(wait_until(
      [&] {
        for (const auto& f : g.exchanges[0]->take()) {
          EXPECT_EQ(f.values.front(), 1.0f) << "junk taken as segment " << f.segment;
        }
        return rejects.get(RejectReason::kSegment) >= 2;
      },
      10s));
  EXPECT_EQ(rejects.get(RejectReason::kSegment), 2u);
}

}  // namespace
}  // namespace gossipd::protocol
