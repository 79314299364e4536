// Segment deadlines learned from arrivals (--deadline adaptive): the rule
// alone, then a crossover cluster with one member whose every message is
// late, whose segments the others learn to skip instead of waiting on.
#include "protocol/gossip/segment_deadlines.h"

#include <gtest/gtest.h>

#include "protocol/gossip/crossover.h"
#include "tests/protocol/test_cluster.h"
#include "topology/derangement.h"

namespace gossipd::protocol {
namespace {

using std::chrono::milliseconds;
using testing::TestCluster;

DeadlineSpec adaptive(milliseconds ceiling) {
  DeadlineSpec d;
  d.ceiling = ceiling;
  d.adaptive = true;
  return d;
}

std::string peer(int i) { return "p" + std::to_string(i); }

TEST(SegmentDeadlines, AFixedDeadlineIsTheCeilingWhateverArrives) {
  DeadlineSpec spec = adaptive(milliseconds(500));
  spec.adaptive = false;
  SegmentDeadlines d(spec);
  for (int i = 0; i < 100; ++i) d.arrived(peer(i % 10), milliseconds(3));
  EXPECT_EQ(d.current(), milliseconds(500));
  EXPECT_EQ(d.typical(peer(0)), milliseconds(3));
}

TEST(SegmentDeadlines, TheCeilingHoldsUntilEnoughPeersAreSeenThenTheQuantilePlusItsMargin) {
  SegmentDeadlines d(adaptive(milliseconds(500)));
  for (size_t i = 0; i + 1 < d.spec().warm_up; ++i) d.arrived(peer(static_cast<int>(i)), milliseconds(8));
  EXPECT_EQ(d.current(), milliseconds(500));
  d.arrived(peer(99), milliseconds(8));
  EXPECT_EQ(d.current(), milliseconds(8) * 1.25 + milliseconds(2));  // 12 ms
}

TEST(SegmentDeadlines, APeerIsTypicallyItsMedianSoOneLateSegmentMovesNothing) {
  SegmentDeadlines d(adaptive(milliseconds(2000)));
  for (int i = 0; i < 8; ++i) d.arrived(peer(i), milliseconds(10));
  d.arrived(peer(0), milliseconds(10));
  d.arrived(peer(0), milliseconds(900));  // a member that fell behind once
  d.arrived(peer(0), milliseconds(10));
  EXPECT_EQ(d.typical(peer(0)), milliseconds(10));
  EXPECT_EQ(d.current(), milliseconds(10) * 1.25 + milliseconds(2));
  EXPECT_EQ(d.typical(peer(42)), milliseconds(2000)) << "a peer not seen";
}

TEST(SegmentDeadlines, SlowPeersUnderTheQuantileAreCutAndMoreAreWaitedFor) {
  SegmentDeadlines d(adaptive(milliseconds(2000)));
  // 10 peers, 2 of them (20%, within 1 − 0.8) at 400 ms: left out.
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 10; ++i) d.arrived(peer(i), milliseconds(i >= 8 ? 400 : 10));
  }
  EXPECT_LT(d.current(), milliseconds(400));
  // A third one slows down (30%): the deadline takes them in.
  for (int round = 0; round < 8; ++round) d.arrived(peer(7), milliseconds(400));
  EXPECT_GE(d.current(), milliseconds(400));
}

TEST(SegmentDeadlines, APeerThatIsFastAgainIsTakenBack) {
  SegmentDeadlines d(adaptive(milliseconds(2000)));
  for (int i = 0; i < 10; ++i) d.arrived(peer(i), milliseconds(10));
  for (int k = 0; k < 8; ++k) d.missed(peer(9));  // gone slow: counted at twice the deadline
  EXPECT_GT(d.typical(peer(9)), d.current());
  for (int k = 0; k < 5; ++k) d.arrived(peer(9), milliseconds(11));  // in time again
  EXPECT_LE(d.typical(peer(9)), d.current());
}

TEST(SegmentDeadlines, APeerTypicallyPastTheDeadlineIsWaitedForOnlyEveryProbeEveryDraws) {
  SegmentDeadlines d(adaptive(milliseconds(2000)));
  for (int i = 0; i < 10; ++i) d.arrived(peer(i), milliseconds(10));
  for (int k = 0; k < 8; ++k) d.missed(peer(9));
  ASSERT_GT(d.typical(peer(9)), d.current());
  EXPECT_EQ(d.wait_for(peer(0)), d.current()) << "a peer in time is waited for";
  EXPECT_EQ(d.wait_for(peer(42)), d.current()) << "a peer not seen is waited for";
  const size_t every = d.spec().probe_every;
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 1; k < every; ++k) EXPECT_EQ(d.wait_for(peer(9)), milliseconds(0)) << "draw " << k;
    EXPECT_EQ(d.wait_for(peer(9)), d.current()) << "its probe";
  }
  // In time again (its probes say so): waited for at every draw.
  for (int k = 0; k < 5; ++k) d.arrived(peer(9), milliseconds(10));
  for (size_t k = 0; k < every; ++k) EXPECT_EQ(d.wait_for(peer(9)), d.current());
}

TEST(SegmentDeadlines, AFixedDeadlineWaitsForEveryPeerWhateverItsArrivals) {
  DeadlineSpec spec = adaptive(milliseconds(500));
  spec.adaptive = false;
  SegmentDeadlines d(spec);
  for (int i = 0; i < 10; ++i) d.arrived(peer(i), milliseconds(10));
  for (int k = 0; k < 8; ++k) d.missed(peer(9));
  for (int k = 0; k < 20; ++k) EXPECT_EQ(d.wait_for(peer(9)), milliseconds(500));
}

TEST(SegmentDeadlines, ANetworkThatSlowsDownIsFollowedUpToTheCeiling) {
  SegmentDeadlines d(adaptive(milliseconds(1000)));
  for (int i = 0; i < 10; ++i) d.arrived(peer(i), milliseconds(5));
  ASSERT_LT(d.current(), milliseconds(20));
  // Every segment now takes 300 ms: each one missed counts as twice the
  // deadline, and the deadline climbs until it takes them in again.
  int missed = 0;
  for (; missed < 1000 && d.current() < milliseconds(300); ++missed) d.missed(peer(missed % 10));
  EXPECT_GE(d.current(), milliseconds(300));
  EXPECT_LT(missed, 200) << "followed within a few rounds of every peer";
  // Slower than the ceiling: the ceiling, never more.
  for (int i = 0; i < 200; ++i) d.missed(peer(i % 10));
  EXPECT_EQ(d.current(), milliseconds(1000));
}

TEST(SegmentDeadlines, TheQuantileIsTheShareOfPeersWaitedFor) {
  DeadlineSpec spec = adaptive(milliseconds(2000));
  spec.quantile = 0.5;
  SegmentDeadlines d(spec);
  for (int i = 0; i < 8; ++i) d.arrived(peer(i), milliseconds(i < 5 ? 10 : 100));  // 3 of 8 slow
  EXPECT_EQ(d.current(), milliseconds(10) * 1.25 + milliseconds(2));
}

// 8 members 40 ms apart, n7's every message held 1.5 s (a slow link out of it). With a
// 10 s ceiling a fixed deadline would take its segments in and wait for
// them; learned deadlines skip them and keep the others' rounds short.
TEST(AdaptiveDeadlineCrossover, TheOthersSkipASlowMembersSegmentsInsteadOfWaiting) {
  constexpr size_t n = 8, kSlow = n - 1, kValues = 1000;
  constexpr uint64_t kWarmUp = 6, kRounds = 20;
  const SegmentTable segments{{0, 250}, {250, 250}, {500, 250}, {750, 250}};
  TestCluster cluster(
      n, [](size_t i, NodeOptions& o) { o.faults.delay = milliseconds(i == kSlow ? 1500 : 40); });
  for (size_t i = 0; i < n; ++i) register_segments(cluster.node(i), segments);
  const topology::View view(1, cluster.ids());
  GossipOptions opts;
  opts.seed = 9;
  opts.segment_deadline = milliseconds(10000);
  opts.adaptive_deadline = true;
  opts.deadline_quantile =
      0.8;  // n7 is one of each member's 7 peers  // n7 sends a seventh of each member's segments
  std::vector<RoundStats> late(n);  // the rounds after the warm-up
  std::vector<SegmentDeadlines::Duration> deadline(n);
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    std::vector<float> x(kValues, static_cast<float>(rank));
    CrossoverGossip g(cluster.node(rank), segments, opts);
    for (uint64_t r = 0; r < kRounds; ++r) {
      const RoundStats st = g.run_round(view, r, x);
      if (r >= kWarmUp) late[rank] += st;
    }
    deadline[rank] = g.deadlines().current();
  }));
  size_t slow_segments = 0, skipped = 0;  // what n7 sent the others after the warm-up; what they skipped
  for (size_t rank = 0; rank < kSlow; ++rank) {
    size_t from_slow = 0;
    for (uint64_t r = kWarmUp; r < kRounds; ++r) {
      for (uint32_t s = 0; s < segments.size(); ++s) {
        from_slow += topology::crossover_exchange(view, rank, opts.seed, r, s)->receive_from == kSlow;
      }
    }
    EXPECT_GT(late[rank].segments_received, 0u) << "rank " << rank;
    EXPECT_LT(deadline[rank], milliseconds(1500)) << "rank " << rank << " waits for n7";
    slow_segments += from_slow;
    skipped += late[rank].segments_skipped;
  }
  ASSERT_GT(slow_segments, 0u) << "the draws must have named n7";
  // Every one of n7's segments after the warm-up skipped (a fixed deadline of
  // 10 s skips none); fast members' segments may be too, where one fell behind.
  EXPECT_GE(skipped, slow_segments) << "n7's segments were waited for";
}

}  // namespace
}  // namespace gossipd::protocol
