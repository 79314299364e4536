// Pure averaging (no gradients): replicas start random and must converge to
// the exact mean of the initial replicas, for every protocol and n = 2..8,
// over the real ZeroMQ loopback transport with ranks as threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <thread>

#include "protocol/collectives/consensus.h"
#include "protocol/collectives/ring.h"
#include "protocol/collectives/segment_inbox.h"
#include "protocol/gossip/crossover.h"
#include "protocol/gossip/overlapped_round.h"
#include "protocol/gossip/push_sum.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"
#include "tests/protocol/test_cluster.h"
#include "topology/derangement.h"

namespace gossipd::protocol {
namespace {

using testing::TestCluster;

const SegmentTable kSegments{{0, 300}, {300, 500}, {800, 1}, {801, 199}};
constexpr size_t kFloats = 1000;

enum class Kind {
  kCrossover,
  kCrossoverOverlap,
  kCrossoverPaced,
  kHierarchical,
  kSgp,
  kSgpPaced,
  kOsgp,
  kAllreduce
};

std::string name(Kind k) {
  switch (k) {
    case Kind::kCrossover:
      return "Crossover";
    case Kind::kCrossoverOverlap:
      return "CrossoverOverlap";
    case Kind::kCrossoverPaced:
      return "CrossoverPaced";
    case Kind::kHierarchical:
      return "Hierarchical";
    case Kind::kSgp:
      return "Sgp";
    case Kind::kSgpPaced:
      return "SgpPaced";
    case Kind::kOsgp:
      return "Osgp";
    case Kind::kAllreduce:
      return "Allreduce";
  }
  return "";
}

std::vector<float> initial(size_t rank) {
  std::mt19937 gen(static_cast<unsigned>(rank * 7919 + 1));
  std::normal_distribution<float> d(static_cast<float>(rank), 1.0f);
  std::vector<float> x(kFloats);
  for (auto& v : x) v = d(gen);
  return x;
}

// Groups of equal size: the hierarchy keeps the global mean only then (with
// unequal groups it converges to the mean of the group means, see crossover.h).
// Even n: two groups; odd n (3, 5, 7 are prime): n groups of one.
std::map<std::string, std::string> equal_groups(const std::vector<std::string>& ids) {
  const size_t groups = ids.size() % 2 == 0 ? 2 : ids.size();
  std::map<std::string, std::string> labels;
  for (size_t i = 0; i < ids.size(); ++i) labels[ids[i]] = "g" + std::to_string(i % groups);
  return labels;
}

// Every node knows the segment table before any rank sends (in the daemon
// this happens before a worker joins).
void register_everywhere(TestCluster& cluster) {
  for (size_t i = 0; i < cluster.size(); ++i) register_segments(cluster.node(i), kSegments);
}

// Nodes that drop `drop` of their outbound messages (seeded) once armed.
NodeOptions lossy(double drop, uint64_t seed) {
  NodeOptions o;
  o.faults.drop = drop;
  o.faults.seed = seed;
  return o;
}

void arm_faults(TestCluster& cluster) {
  for (size_t i = 0; i < cluster.size(); ++i) cluster.node(i).arm_faults();
}

class Averaging : public ::testing::TestWithParam<std::tuple<Kind, size_t>> {};

TEST_P(Averaging, ReplicasReachTheExactInitialMean) {
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const auto kind = std::get<0>(GetParam());
  const auto n = std::get<1>(GetParam());
  TestCluster cluster(n);
  register_everywhere(cluster);
  const topology::View view(1, cluster.ids());
  const auto labels = equal_groups(view.members());
  std::vector<double> mean(kFloats, 0.0);
  for (size_t r = 0; r < n; ++r) {
    auto x = initial(r);
    for (size_t i = 0; i < kFloats; ++i) mean[i] += x[i] / static_cast<double>(n);
  }
  const uint64_t rounds = kind == Kind::kOsgp ? 90 : 60;
  std::vector<std::vector<float>> result(n);
  std::vector<RoundStats> stats(n);
  GossipOptions opts;
  opts.seed = 42;
  opts.segment_deadline = std::chrono::milliseconds(10000);
  opts.pace = kind == Kind::kCrossoverPaced || kind == Kind::kSgpPaced;
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    Node& node = cluster.node(rank);
    auto x = initial(rank);
    if (kind == Kind::kAllreduce) {
      Group group(node, 1, view.members());
      AllreduceRing(group, x).run();
      for (auto& v : x) v /= static_cast<float>(n);
    } else if (kind == Kind::kCrossover || kind == Kind::kCrossoverPaced) {
      CrossoverGossip g(node, kSegments, opts);
      for (uint64_t r = 0; r < rounds; ++r) stats[rank] += g.run_round(view, r, x);
    } else if (kind == Kind::kCrossoverOverlap) {
      CrossoverGossip g(node, kSegments, opts);
      OverlappedRound overlapped([&](uint64_t r, std::span<float> p) { return g.run_round(view, r, p); });
      for (uint64_t r = 0; r < rounds; ++r) stats[rank] += overlapped.exchange(r, x);
      stats[rank] += overlapped.drain(x);
    } else if (kind == Kind::kHierarchical) {
      HierarchicalCrossover g(node, kSegments, opts);
      for (uint64_t r = 0; r < rounds; ++r) stats[rank] += g.run_round(view, labels, r, x);
    } else {
      PushSumGossip g(node, kSegments, opts, 1, kind == Kind::kOsgp);
      // From round 1, as the daemon counts them: OSGP's first round has no
      // earlier one to fold (waiting for it would skip every segment).
      for (uint64_t r = 1; r <= rounds; ++r) stats[rank] += g.run_round(view, r, x);
      std::vector<float> z(x.size());
      g.debias(x, z);
      x = z;
    }
    result[rank] = x;
  }));
  double mean_norm = 0;
  for (double m : mean) mean_norm += m * m;
  mean_norm = std::sqrt(mean_norm);
  for (size_t r = 0; r < n; ++r) {
    double err = 0;
    for (size_t i = 0; i < kFloats; ++i) err += (result[r][i] - mean[i]) * (result[r][i] - mean[i]);
    EXPECT_LE(std::sqrt(err) / mean_norm, 1e-4) << name(kind) << " rank " << r << " of " << n;
    EXPECT_EQ(stats[r].segments_skipped, 0u) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Protocols, Averaging,
    ::testing::Combine(::testing::Values(Kind::kCrossover, Kind::kCrossoverOverlap, Kind::kCrossoverPaced,
                                         Kind::kHierarchical, Kind::kSgp, Kind::kSgpPaced, Kind::kOsgp,
                                         Kind::kAllreduce),
                       ::testing::Values(2, 3, 4, 5, 6, 7, 8)),
    [](const auto& p) { return name(std::get<0>(p.param)) + "_n" + std::to_string(std::get<1>(p.param)); });

// Push-sum under 10% message loss: every lost message takes its mass, so
// unchecked weights shrink by ~5% a round (to ~1e-9 after 400 rounds) and a
// step taken on the numerators grows as 1/w. The weights must stay at or
// above kMinWeight and finite, and the de-biased replicas must still agree
// (a weighted mean of the initial ones: no longer the exact mean).
TEST(PushSumUnderLoss, WeightsStayUpAndTheReplicasStillAgree) {
  constexpr size_t n = 4;
  TestCluster cluster(n, lossy(0.10, 7));
  register_everywhere(cluster);
  arm_faults(cluster);
  const topology::View view(1, cluster.ids());
  GossipOptions opts;
  opts.seed = 42;
  opts.segment_deadline = std::chrono::milliseconds(50);
  constexpr uint64_t kRounds = 400;
  std::vector<std::vector<float>> z(n, std::vector<float>(kFloats));
  std::vector<double> lowest(n, 1.0);
  std::vector<RoundStats> stats(n);
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    auto x = initial(rank);
    PushSumGossip g(cluster.node(rank), kSegments, opts);
    for (uint64_t r = 0; r < kRounds; ++r) {
      stats[rank] += g.run_round(view, r, x);
      for (double w : g.weights()) lowest[rank] = std::min(lowest[rank], w);
    }
    g.debias(x, z[rank]);
  }));
  size_t skipped = 0;
  for (const auto& st : stats) skipped += st.segments_skipped;
  EXPECT_GT(skipped, kRounds * n * kSegments.size() / 20) << "the loss must have hit (~10% of the segments)";
  float lo = 1e30f, hi = -1e30f;  // the hull of the initial replicas
  for (size_t r = 0; r < n; ++r) {
    for (float v : initial(r)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  for (size_t r = 0; r < n; ++r) {
    EXPECT_GE(lowest[r], PushSumGossip::kMinWeight) << "rank " << r;
    double diff = 0, norm = 0;
    for (size_t i = 0; i < kFloats; ++i) {
      ASSERT_TRUE(std::isfinite(z[r][i]));
      EXPECT_GE(z[r][i], lo);
      EXPECT_LE(z[r][i], hi);
      diff += (z[r][i] - z[0][i]) * (z[r][i] - z[0][i]);
      norm += z[0][i] * z[0][i];
    }
    EXPECT_LE(std::sqrt(diff / norm), 1e-3) << "rank " << r << " vs rank 0";
  }
}

TEST(Consensus, DistanceOfKnownReplicasAndItsDecayUnderGossip) {
  TestCluster cluster(4);
  register_everywhere(cluster);
  const topology::View view(1, cluster.ids());
  std::vector<double> before(4), after(4);
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    Group group(cluster.node(rank), 3, view.members());
    // Replica r is r everywhere: mean 1.5, squared distances 2.25, 0.25, 0.25, 2.25 per element.
    std::vector<float> x(kFloats, static_cast<float>(rank));
    before[rank] = ConsensusDistance(group).run(x);
    CrossoverGossip g(cluster.node(rank), kSegments, {});
    for (uint64_t r = 0; r < 10; ++r) g.run_round(view, r, x);
    after[rank] = ConsensusDistance(group).run(x);
  }));
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_NEAR(before[r], 1.25 * kFloats, 1e-3 * kFloats);  // (2.25+0.25+0.25+2.25)/4 per element
    EXPECT_EQ(before[r], before[0]);                         // every member gets the same value
    EXPECT_LT(after[r], before[r] * 1e-2);
  }
}

TEST(Crossover, EveryMemberSendsAndReceivesEachSegmentOncePerRound) {
  TestCluster cluster(5);
  register_everywhere(cluster);
  const topology::View view(1, cluster.ids());
  std::vector<RoundStats> stats(5);
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    auto x = initial(rank);
    CrossoverGossip g(cluster.node(rank), kSegments, {});
    stats[rank] = g.run_round(view, 3, x);
  }));
  for (const auto& s : stats) {
    EXPECT_EQ(s.segments_sent, kSegments.size());
    EXPECT_EQ(s.segments_received, kSegments.size());
    EXPECT_EQ(s.bytes_received, kFloats * sizeof(float));
  }
}

TEST(Hierarchical, SixWorkersInTwoGroupsHoldIdenticalReplicasAfterEachRound) {
  TestCluster cluster(6);
  register_everywhere(cluster);
  const topology::View view(1, cluster.ids());
  const auto labels = equal_groups(view.members());
  const size_t rounds = 5;
  std::vector<std::vector<std::vector<float>>> after(rounds, std::vector<std::vector<float>>(6));
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    auto x = initial(rank);
    HierarchicalCrossover g(cluster.node(rank), kSegments, {});
    for (size_t r = 0; r < rounds; ++r) {
      g.run_round(view, labels, r, x);
      after[r][rank] = x;
    }
  }));
  const topology::Groups groups(view, labels);
  for (size_t r = 0; r < rounds; ++r) {
    for (size_t g = 0; g < groups.count(); ++g) {
      const auto& members = groups.members(g);
      const size_t first = *view.index_of(members[0]);
      for (const auto& m : members) {
        const size_t i = *view.index_of(m);
        EXPECT_EQ(std::memcmp(after[r][i].data(), after[r][first].data(), kFloats * sizeof(float)), 0)
            << "round " << r << " member " << m;
      }
    }
  }
}

// Two members of a group at different rounds (each skipped rounds of its
// own around a view change): their share would take segment owners drawn
// for two rounds. Both learn it from the share's sum, alike: each throws
// RoundsApart with the further round (the worker restores its replica and
// the one behind skips to it); the other group, at one round, goes on.
// In float32 the rounds travel in the share's sum; in a codec, which would
// round them, in a float32 ring of their own before the share.
class RoundsApartIn : public ::testing::TestWithParam<Codec> {};

TEST_P(RoundsApartIn, GroupMembersAtDifferentRoundsBothLearnTheFurthestAndTakeNoShare) {
  TestCluster cluster(4);
  register_everywhere(cluster);
  const topology::View view(1, cluster.ids());
  const auto labels = testing::parity_groups(view);  // {0, 2} and {1, 3}
  GossipOptions opts;
  opts.codec.codec = GetParam();
  opts.segment_deadline = std::chrono::milliseconds(300);  // the groups' segments cross at different rounds
  std::vector<uint64_t> latest(4, 0);
  std::vector<std::vector<float>> replicas(4);
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    auto x = initial(rank);
    HierarchicalCrossover g(cluster.node(rank), kSegments, opts);
    const uint64_t round = rank == 2 ? 8 : 7;
    const std::vector<float> before = x;
    try {
      g.run_round(view, labels, round, x);
    } catch (const RoundsApart& e) {
      latest[rank] = e.latest();
      x = before;  // as the worker does
    }
    g.run_round(view, labels, 9, x);  // then all at one round: each group ends as one replica
    replicas[rank] = x;
  }));
  EXPECT_EQ(latest, (std::vector<uint64_t>{8, 0, 8, 0}));
  EXPECT_EQ(replicas[0], replicas[2]);
  EXPECT_EQ(replicas[1], replicas[3]);
}

INSTANTIATE_TEST_SUITE_P(Hierarchical, RoundsApartIn,
                         ::testing::Values(Codec::kNone, Codec::kFp16, Codec::kInt8),
                         [](const ::testing::TestParamInfo<Codec>& param) {
                           return codec_name(param.param);
                         });

class SilentPeer : public ::testing::TestWithParam<bool> {};

TEST_P(SilentPeer, CostsSkippedSegmentsNotAHang) {
  TestCluster cluster(3);
  register_everywhere(cluster);
  const topology::View view(1, cluster.ids());
  GossipOptions opts;
  opts.segment_deadline = std::chrono::milliseconds(300);
  opts.pace = GetParam();  // paced: the silent peer's notes never come either
  std::vector<RoundStats> stats(3);
  // Rank 2 never takes part. The round returning at all is the point (a
  // hang is the test's own timeout); what it cost is counted below.
  testing::expect_no_errors(cluster.run(
      [&](size_t rank) {
        auto x = initial(rank);
        CrossoverGossip g(cluster.node(rank), kSegments, opts);
        stats[rank] = g.run_round(view, 0, x);
      },
      2));
  // The segments each live member expects from the silent one, from the
  // round's derangements (with 3 members every one is a 3-cycle).
  const size_t silent = *view.index_of(cluster.node(2).id());
  size_t expected_from_silent = 0;
  for (size_t rank = 0; rank < 2; ++rank) {
    const size_t self = *view.index_of(cluster.node(rank).id());
    size_t from_silent = 0;
    for (uint32_t s = 0; s < kSegments.size(); ++s) {
      if (topology::crossover_exchange(view, self, opts.seed, 0, s)->receive_from == silent) ++from_silent;
    }
    expected_from_silent += from_silent;
    // Every one of them was skipped (a segment from the live member may be
    // skipped too when it comes past the deadline: at least, not exactly),
    // and every segment was either received or skipped: the round ended.
    EXPECT_GE(stats[rank].segments_skipped, from_silent) << "rank " << rank;
    EXPECT_EQ(stats[rank].segments_skipped + stats[rank].segments_received, kSegments.size())
        << "rank " << rank;
  }
  EXPECT_GT(expected_from_silent, 0u) << "the derangements route no segment through the silent member";
}

INSTANTIATE_TEST_SUITE_P(Crossover, SilentPeer, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Paced" : "Unpaced"; });

// Pacing's repeat, step by step: the receiver's "ready" note to its sender
// is lost (taken out of the sender's mailbox here). The receiver, waiting
// for the segment, repeats the note after `renudge`; the sender then sends
// and the segment arrives. Without the repeat the sender would wait out its
// deadline and skip the segment.
class LostNote : public ::testing::TestWithParam<int> {};

TEST_P(LostNote, IsRepeatedByTheWaitingReceiver) {
  const std::chrono::milliseconds renudge(GetParam());
  TestCluster cluster(2);
  register_everywhere(cluster);
  Node& receiver = cluster.node(0);
  Node& sender = cluster.node(1);
  constexpr uint64_t kRound = 5;
  const auto tag = CrossoverGossip::kTag;
  const auto start = std::chrono::steady_clock::now();
  std::optional<Message> got;
  std::thread r([&] {
    SegmentInbox inbox(receiver, tag, kRound);
    inbox.announce_ready(sender.id());
    got = inbox.receive(sender.id(), 0, kSegments[0].length, start + std::chrono::milliseconds(1500), {},
                        renudge);
  });
  bool ready = false;
  std::chrono::steady_clock::duration waited{};
  {
    SegmentInbox inbox(sender, tag, kRound);
    const ChunkKey note{tags::ready_tag(tag), kRound, receiver.id()};
    ASSERT_TRUE(sender.mailbox().pop_chunk(note, start + std::chrono::seconds(5), {}))
        << "the first note never came";
    const auto t0 = std::chrono::steady_clock::now();  // the note is lost: wait for another
    ready = inbox.await_ready(receiver.id(), t0 + std::chrono::milliseconds(1000), {});
    // From the start, not from t0: on a loaded machine the first note may be
    // taken after the repeat was already sent.
    waited = std::chrono::steady_clock::now() - start;
    if (ready) {
      const auto x = initial(1);
      inbox.send(receiver.id(), 0, std::span<const float>(x).first(kSegments[0].length), std::nullopt,
                 std::chrono::milliseconds(1000));
    }
  }
  r.join();
  if (renudge.count() == 0) {
    EXPECT_FALSE(ready) << "nobody repeats the note without renudge";
    EXPECT_FALSE(got);
    return;
  }
  // The event: the receiver's repeat reached the sender before the
  // sender's await deadline (1 s after the first note was lost), so the
  // segment went out instead of being skipped. Not before renudge: it was
  // the repeat, not the first note.
  EXPECT_TRUE(ready) << "no repeated note before the sender's deadline";
  EXPECT_GE(waited, renudge - std::chrono::milliseconds(5))
      << "the ready came from the repeat, not the first note";
  ASSERT_TRUE(got) << "the segment never arrived";
  EXPECT_EQ(got->envelope.count(), kSegments[0].length);
}

INSTANTIATE_TEST_SUITE_P(CrossoverPaced, LostNote, ::testing::Values(0, 50),
                         [](const auto& p) { return p.param ? "Renudge50ms" : "NoRenudge"; });

}  // namespace
}  // namespace gossipd::protocol
