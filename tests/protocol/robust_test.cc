// Members that cannot be trusted (protocol/robust/): the attacks injected as
// faults, ClippedGossip's clipping and naming, and Crossover-SGD with one
// Byzantine member of 8, with and without --robust clip. Ranks as threads
// over the real ZeroMQ loopback transport.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "protocol/gossip/crossover.h"
#include "protocol/gossip/push_sum.h"
#include "protocol/robust/attack.h"
#include "protocol/robust/clipped_gossip.h"
#include "protocol/wire/errors.h"
#include "tests/protocol/test_cluster.h"
#include "topology/exponential_graph.h"

namespace gossipd::protocol::robust {
namespace {

using testing::TestCluster;

double norm(std::span<const float> x) {
  double s = 0;
  for (float v : x) s += double(v) * v;
  return std::sqrt(s);
}

TEST(Attacks, EachKindSendsWhatItsNameSays) {
  const std::vector<float> x{1.0f, -2.0f, 0.5f};
  SegmentAttack flip({AttackKind::kSignFlip});
  const auto f = flip.apply(0, 1, x);
  EXPECT_EQ(std::vector<float>(f.begin(), f.end()), (std::vector<float>{-1.0f, 2.0f, -0.5f}));
  SegmentAttack scaled({AttackKind::kScaled});
  const auto s = scaled.apply(0, 1, x);
  EXPECT_EQ(std::vector<float>(s.begin(), s.end()), (std::vector<float>{1000.0f, -2000.0f, 500.0f}));
  SegmentAttack by3({AttackKind::kScaled, 3});
  EXPECT_FLOAT_EQ(by3.apply(0, 1, x)[1], -6.0f);
  SegmentAttack nan({AttackKind::kNonFinite});
  for (float v : nan.apply(0, 1, x)) EXPECT_TRUE(std::isnan(v));
}

TEST(Attacks, NoiseIsReproduciblePerRoundAndSegmentAndHasItsSigma) {
  const std::vector<float> zero(20000, 0.0f);
  SegmentAttack a({AttackKind::kNoise, 2.0, 7}), b({AttackKind::kNoise, 2.0, 7});
  const auto drawn = a.apply(3, 9, zero);
  const std::vector<float> first(drawn.begin(), drawn.end());
  b.apply(0, 1, zero);  // another segment first: the draws do not depend on order
  const auto again = b.apply(3, 9, zero);
  EXPECT_EQ(first, std::vector<float>(again.begin(), again.end()));
  const auto other = a.apply(3, 10, zero);
  EXPECT_NE(first, std::vector<float>(other.begin(), other.end())) << "a new round draws anew";
  EXPECT_NEAR(norm(first) / std::sqrt(double(zero.size())), 2.0, 0.05);
}

TEST(Attacks, StaleReplaysEachSegmentAsFirstSent) {
  SegmentAttack stale({AttackKind::kStale});
  stale.apply(0, 1, std::vector<float>{1, 2});
  stale.apply(1, 1, std::vector<float>{5});
  const auto later = stale.apply(0, 8, std::vector<float>{9, 9});
  EXPECT_EQ(std::vector<float>(later.begin(), later.end()), (std::vector<float>{1, 2}));
  EXPECT_EQ(stale.apply(1, 8, std::vector<float>{7})[0], 5.0f);
}

TEST(Attacks, IpmSendsMinusEpsilonTimesTheValuesAndLabelFlipSendsThemAsTheyAre) {
  const std::vector<float> x{1.0f, -2.0f};
  SegmentAttack ipm({AttackKind::kIpm});
  EXPECT_FLOAT_EQ(ipm.apply(0, 1, x)[0], -0.1f);
  EXPECT_FLOAT_EQ(ipm.apply(0, 1, x)[1], 0.2f);
  SegmentAttack flip({AttackKind::kLabelFlip});
  const auto same = flip.apply(0, 1, x);
  EXPECT_EQ(std::vector<float>(same.begin(), same.end()), x);
  EXPECT_TRUE(attack_poisons_data(AttackKind::kLabelFlip));
  EXPECT_FALSE(attack_poisons_data(AttackKind::kIpm));
}

TEST(Attacks, AlieSubtractsZTimesTheSpreadItReceivedAroundItsOwnValues) {
  SegmentAttack alie({AttackKind::kAlie, 2.0});
  const std::vector<float> x{1.0f, 1.0f};
  auto sent = alie.apply(0, 1, x, "w1");
  EXPECT_EQ(std::vector<float>(sent.begin(), sent.end()), x) << "nothing received yet: its own values";
  alie.observe("w1", 0, std::vector<float>{1.5f, 0.0f}, x);  // spread 0.5, 1
  sent = alie.apply(0, 2, x, "w2");
  EXPECT_FLOAT_EQ(sent[0], 0.0f);
  EXPECT_FLOAT_EQ(sent[1], -1.0f);
  alie.observe("w2", 0, std::vector<float>{1.0f, 1.0f}, x);  // mean square 3/4 of before
  EXPECT_FLOAT_EQ(alie.apply(0, 3, x)[1], 1.0f - 2.0f * std::sqrt(0.75f));
  EXPECT_FLOAT_EQ(alie.apply(1, 3, x)[1], 1.0f) << "another segment has its own spread";
}

TEST(Attacks, DissensusPushesEachReceiverAwayFromTheAttackersOwnValues) {
  SegmentAttack d({AttackKind::kDissensus, 0.5});
  const std::vector<float> x{1.0f, 1.0f};
  d.observe("w1", 0, std::vector<float>{3.0f, 0.0f}, x);
  const auto to_w1 = d.apply(0, 2, x, "w1");
  EXPECT_FLOAT_EQ(to_w1[0], 4.0f);   // 3 + 0.5·(3 − 1)
  EXPECT_FLOAT_EQ(to_w1[1], -0.5f);  // 0 + 0.5·(0 − 1)
  const auto to_w2 = d.apply(0, 2, x, "w2");
  EXPECT_EQ(std::vector<float>(to_w2.begin(), to_w2.end()), x) << "never heard from w2: its own values";
  SegmentAttack honest_flip({AttackKind::kSignFlip});
  honest_flip.observe("w1", 0, std::vector<float>{3.0f, 0.0f}, x);  // kept by no attack that needs none
  EXPECT_FLOAT_EQ(honest_flip.apply(0, 2, x, "w1")[0], -1.0f);
}

TEST(Attacks, NamesRoundTripAndAnUnknownOneIsNone) {
  for (const std::string& name : attack_names()) {
    ASSERT_TRUE(attack_from_name(name)) << name;
    EXPECT_EQ(attack_name(*attack_from_name(name)), name);
  }
  EXPECT_FALSE(attack_from_name("signflip"));
}

TEST(ClippedGossipMix, WithinTauItIsThePlainAverageBeyondItMovesExactlyHalfTau) {
  ClipSpec spec;
  spec.tau = 1.0;
  ClippedGossip clip(spec);
  std::vector<float> x{0, 0}, near{0.3f, 0.4f};  // distance 0.5: not clipped
  EXPECT_FALSE(clip.mix("p", 0, x, near));
  EXPECT_FLOAT_EQ(x[0], 0.15f);
  EXPECT_FLOAT_EQ(x[1], 0.2f);
  std::vector<float> y{0, 0}, far{3000, 4000};  // distance 5000: moved by 0.5 towards it
  EXPECT_TRUE(clip.mix("q", 0, y, far));
  EXPECT_NEAR(y[0], 0.3, 1e-6);
  EXPECT_NEAR(y[1], 0.4, 1e-6);
  EXPECT_EQ(clip.peers().at("q").clipped, 1u);
  EXPECT_EQ(clip.peers().at("p").clipped, 0u);
}

TEST(ClippedGossipMix, AdaptiveTauIsKappaTimesALowQuantileOfRecentDistancesAndColdBeforeThem) {
  ClipSpec spec;  // kappa 2, quantile 0.25, min_history 4, cold 0.01, far 4
  ClippedGossip clip(spec);
  EXPECT_DOUBLE_EQ(clip.tau(0, 100.0), 1.0) << "no history: cold × ‖x‖";
  for (float d :
       {5.0f, 500.0f, 3.0f, 2.0f}) {  // own values 0: cold τ is 0, the distances are kept as they are
    std::vector<float> x{0}, y{d};
    clip.mix("p", 0, x, y);
  }
  EXPECT_DOUBLE_EQ(clip.tau(0, 10.0), 4.0) << "2 × the lowest of (2, 3, 5, 500)";
  EXPECT_DOUBLE_EQ(clip.tau(1, 100.0), 1.0) << "segments keep their own history";
  // A distance beyond far × τ is remembered as far × τ: an attacker raises
  // τ by at most that factor at a time. 4 × 4 = 16 enters, not 1e6.
  std::vector<float> x{0}, y{1e6f};
  clip.mix("bad", 0, x, y);
  EXPECT_DOUBLE_EQ(clip.tau(0, 10.0), 6.0) << "2 × the second lowest of (2, 3, 5, 500, 16)";
}

TEST(ClippedGossipMix, BadSpecsAreRefused) {
  for (auto bad : {ClipSpec{.tau = -1}, ClipSpec{.kappa = 0}, ClipSpec{.window = 0}, ClipSpec{.far = 0.5}}) {
    EXPECT_THROW(ClippedGossip{bad}, ProtocolConfigError);
  }
}

TEST(ClippedGossipNaming, APeerFarInNameAfterOfItsRoundsInARowIsNamedOnceAndANearOneNever) {
  ClipSpec spec;
  spec.tau = 1.0;
  spec.name_after = 3;
  spec.name_history = 0;
  ClippedGossip clip(spec);
  std::vector<std::string> named;
  for (int round = 0; round < 6; ++round) {
    std::vector<float> x{0}, far{10}, near{0.5f};
    clip.mix("bad", 0, x, far);
    if (round % 2 == 0) clip.mix("flaky", 0, x, far);  // far every other round: never 3 in a row
    if (round % 2 == 1) clip.mix("flaky", 0, x, near);
    clip.mix("good", 1, x, near);
    const auto now = clip.end_round();
    if (round == 2) {
      EXPECT_EQ(now, std::vector<std::string>{"bad"});
    }
    named.insert(named.end(), now.begin(), now.end());
  }
  EXPECT_EQ(named, std::vector<std::string>{"bad"});
  EXPECT_TRUE(clip.peers().at("bad").named);
  EXPECT_FALSE(clip.peers().at("flaky").named);
}

TEST(ClippedGossipNaming, RefusedSegmentsCountAsFarAndSilentRoundsDoNotBreakARow) {
  ClipSpec spec;
  spec.name_after = 2;
  ClippedGossip clip(spec);
  clip.refused("nan");
  EXPECT_TRUE(clip.end_round().empty());
  EXPECT_TRUE(clip.end_round().empty()) << "not heard from: its row goes on";
  clip.refused("nan");
  EXPECT_EQ(clip.end_round(), std::vector<std::string>{"nan"});
  EXPECT_EQ(clip.peers().at("nan").refused, 2u);
}

// Crossover-SGD's averaging, 8 members, member kBad Byzantine. The honest
// replicas start as after some local steps, one model plus a little of
// their own, and every round each takes a step, the same for all
// (`drift`) plus a little noise of its own, as if training: a stale
// replay falls behind, and the replicas never agree exactly.
const SegmentTable kTable{{0, 250}, {250, 250}, {500, 250}, {750, 250}};
constexpr size_t kValues = 1000, kMembers = 8, kBad = 5;
constexpr uint64_t kRounds = 24;

std::vector<float> drift() {
  std::mt19937 gen(23);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> g(kValues);
  for (float& v : g) v = d(gen);
  return g;
}

std::vector<float> start(size_t rank) {
  std::mt19937 base_gen(11), own_gen(static_cast<unsigned>(100 + rank));
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(kValues);
  for (float& v : x) v = d(base_gen);
  for (float& v : x) v += 0.01f * d(own_gen);
  return x;
}

struct Outcome {
  double worst = 0;  // the honest replicas' largest distance from their starting mean, over ‖mean‖
  std::vector<std::vector<std::string>> named;  // by each member
  std::string bad;                              // kBad's id
  std::vector<std::vector<float>> x;            // the replicas at the end
};

enum class Kind { kCrossover, kSgp, kOsgp, kHierarchical };

// One member's rounds 1..rounds of protocol `kind` on its replica z (for
// push-sum, numerators and weights around it), each after a `step` plus
// noise from `own`; returns the peers it named.
std::vector<std::string> member_rounds(Kind kind, Node& node, const topology::View& view,
                                       const GossipOptions& opts, uint64_t rounds,
                                       std::span<const float> step, std::mt19937& own,
                                       std::vector<float>& z) {
  std::normal_distribution<float> noise(0.0f, 0.002f);
  std::vector<std::string> named;
  const auto train = [&] {
    for (size_t i = 0; i < kValues; ++i) z[i] += step[i] + noise(own);
  };
  if (kind == Kind::kHierarchical) {
    // Under the defence the owners rotate, as gossipd run's do (group_spread).
    HierarchicalCrossover g(node, kTable, opts,
                            opts.clip ? topology::GroupSpread::kRotate : topology::GroupSpread::kSpread);
    for (uint64_t round = 1; round <= rounds; ++round) {
      train();
      const RoundStats st = g.run_round(view, testing::parity_groups(view), round, z);
      named.insert(named.end(), st.named.begin(), st.named.end());
    }
    return named;
  }
  if (kind == Kind::kCrossover) {
    CrossoverGossip g(node, kTable, opts);
    for (uint64_t round = 1; round <= rounds; ++round) {
      train();
      const RoundStats st = g.run_round(view, round, z);
      named.insert(named.end(), st.named.begin(), st.named.end());
    }
    return named;
  }
  PushSumGossip g(node, kTable, opts, 1, kind == Kind::kOsgp);
  std::vector<float> x(z);  // weights 1: x = z
  for (uint64_t round = 1; round <= rounds; ++round) {
    g.debias(x, z);
    train();
    g.rebias(z, x);
    const RoundStats st = g.run_round(view, round, x);
    named.insert(named.end(), st.named.begin(), st.named.end());
  }
  g.debias(x, z);
  return named;
}

// kRounds rounds; member kBad attacks with `attack` (none: honest).
Outcome run_with(std::optional<AttackKind> attack, bool clipped, uint64_t rounds = kRounds,
                 Kind kind = Kind::kCrossover) {
  TestCluster cluster(kMembers);
  for (size_t i = 0; i < kMembers; ++i) register_segments(cluster.node(i), kTable);
  const topology::View view(1, cluster.ids());
  std::vector<std::vector<float>> x(kMembers);
  for (size_t r = 0; r < kMembers; ++r) x[r] = start(r);
  const std::vector<float> step = drift();
  std::vector<double> mean(kValues, 0.0);  // where the honest mean ends without an attacker
  for (size_t r = 0; r < kMembers; ++r)
    for (size_t i = 0; r != kBad && i < kValues; ++i) mean[i] += x[r][i] / double(kMembers - 1);
  for (size_t i = 0; i < kValues; ++i) mean[i] += double(rounds) * step[i];
  Outcome out;
  out.named.resize(kMembers);
  out.bad = cluster.node(kBad).id();
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    std::mt19937 own(static_cast<unsigned>(7 + rank));
    GossipOptions opts;
    opts.seed = 3;
    opts.segment_deadline = std::chrono::milliseconds(20000);  // a hang guard
    if (rank == kBad && attack) opts.attack = AttackSpec{*attack, 0, 9};
    if (clipped) opts.clip = ClipSpec{};
    out.named[rank] = member_rounds(kind, cluster.node(rank), view, opts, rounds, step, own, x[rank]);
  }));
  double mean_norm = 0;
  for (double v : mean) mean_norm += v * v;
  for (size_t r = 0; r < kMembers; ++r) {
    if (r == kBad) continue;
    double d = 0;
    for (size_t i = 0; i < kValues; ++i) d += (x[r][i] - mean[i]) * (x[r][i] - mean[i]);
    out.worst = std::max(out.worst, std::isfinite(d) ? std::sqrt(d / mean_norm) : INFINITY);
  }
  out.x = std::move(x);
  return out;
}

class OneByzantineOfEight : public ::testing::TestWithParam<AttackKind> {};

TEST_P(OneByzantineOfEight, ClippedGossipKeepsTheHonestNearTheirMeanAndEveryHonestMemberNamesIt) {
  const AttackKind attack = GetParam();
  const Outcome plain = run_with(attack, false);
  const Outcome clipped = run_with(attack, true);
  if (attack == AttackKind::kScaled || attack == AttackKind::kSignFlip || attack == AttackKind::kNoise) {
    EXPECT_GT(plain.worst, 0.2) << "without a defence the attack should move the honest replicas";
  }
  // Measured: 0.001 without an attacker (the honest spread), 0.003-0.007
  // clipped, 0.3 (noise) to 1e16 (scaled) without the defence.
  EXPECT_LT(clipped.worst, 0.02) << "plain: " << plain.worst;
  for (size_t r = 0; r < kMembers; ++r) {
    if (r == kBad) continue;
    EXPECT_EQ(clipped.named[r], std::vector<std::string>{clipped.bad}) << "member " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Attacks, OneByzantineOfEight,
                         ::testing::Values(AttackKind::kSignFlip, AttackKind::kScaled, AttackKind::kNoise,
                                           AttackKind::kNonFinite, AttackKind::kStale, AttackKind::kIpm),
                         [](const ::testing::TestParamInfo<AttackKind>& kind) {
                           return std::string(attack_name(kind.param));
                         });

// SGP and OSGP: a Byzantine member pushes its attack on its de-biased
// values; --robust clip mixes pushes in the de-biased values.
class OneByzantineOfEightPushing : public ::testing::TestWithParam<std::tuple<Kind, AttackKind>> {};

TEST_P(OneByzantineOfEightPushing, ClippedPushSumKeepsTheHonestNearTheirMeanAndNamesIt) {
  const auto [kind, attack] = GetParam();
  // OSGP's replicas lag the steps by the round its pushes are in flight:
  // 0.25 of the mean's norm here without an attacker (SGP: 0.003).
  const double honest = run_with(std::nullopt, false, kRounds, kind).worst;
  const Outcome plain = run_with(attack, false, kRounds, kind);
  const Outcome clipped = run_with(attack, true, kRounds, kind);
  EXPECT_GT(plain.worst, honest + 0.1) << "without a defence the attack should move the honest replicas";
  EXPECT_LT(clipped.worst, honest + 0.02) << "plain: " << plain.worst << ", no attacker: " << honest;
  // With one out-peer a round, only the members the attacker pushes to
  // hear from it (3 of 7 here): each of them names it, no one else does.
  size_t namers = 0;
  for (size_t r = 0; r < kMembers; ++r) {
    bool pushed_to = false;
    for (uint64_t round = 1; round <= kRounds; ++round) {
      const auto in = topology::exponential_in_peers(kMembers, r, round, 1);
      pushed_to = pushed_to || std::find(in.begin(), in.end(), kBad) != in.end();
    }
    if (r == kBad) continue;
    const std::vector<std::string> expected =
        pushed_to ? std::vector<std::string>{clipped.bad} : std::vector<std::string>{};
    EXPECT_EQ(clipped.named[r], expected) << "member " << r;
    namers += pushed_to;
  }
  EXPECT_GE(namers, 3u);
}

INSTANTIATE_TEST_SUITE_P(Attacks, OneByzantineOfEightPushing,
                         ::testing::Combine(::testing::Values(Kind::kSgp, Kind::kOsgp),
                                            ::testing::Values(AttackKind::kSignFlip, AttackKind::kScaled,
                                                              AttackKind::kNoise)),
                         [](const ::testing::TestParamInfo<std::tuple<Kind, AttackKind>>& p) {
                           return std::string(std::get<0>(p.param) == Kind::kSgp ? "Sgp_" : "Osgp_") +
                                  std::string(attack_name(std::get<1>(p.param)));
                         });

// Hierarchical Crossover-SGD, two groups of 4 (kBad in the odd one): the
// attacker puts its attack into its group's mean, into the segments it owns
// in the share, and sends it to the other group's owners. With --robust clip
// the group's CenteredClip, the share's bound and the owners' ClippedGossip
// keep the honest replicas near their mean, and every member of the
// attacker's group names it (each judges every member of its group every
// round).
class OneByzantineOfEightInGroups : public ::testing::TestWithParam<AttackKind> {};

TEST_P(OneByzantineOfEightInGroups, TheGroupsRobustMeanAndClippedGossipKeepTheHonestNearTheirMean) {
  const AttackKind attack = GetParam();
  const double honest = run_with(std::nullopt, false, kRounds, Kind::kHierarchical).worst;
  const Outcome plain = run_with(attack, false, kRounds, Kind::kHierarchical);
  const Outcome clipped = run_with(attack, true, kRounds, Kind::kHierarchical);
  if (attack == AttackKind::kNonFinite) {  // refused with or without a defence (group_averages.h)
    EXPECT_LT(plain.worst, honest + 0.1) << "no attacker: " << honest;
  } else {
    EXPECT_GT(plain.worst, honest + 0.5) << "without a defence the attack should move the honest replicas";
  }
  // Measured 0.017-0.018 (plain: 0.96, 1e37, 0.59 for the stale replay;
  // 1.12 and 3e20 with the share unbounded): an owner hears a segment
  // every 4th round, as the owners rotate, so its radius stays cold (1% of
  // the segment's norm) for 16 rounds, against 4 in flat Crossover
  // (0.003-0.007).
  EXPECT_LT(clipped.worst, honest + 0.1) << "plain: " << plain.worst << ", no attacker: " << honest;
  for (size_t r = 0; r < kMembers; ++r) {
    if (r == kBad) continue;
    for (const auto& n : clipped.named[r])
      EXPECT_EQ(n, clipped.bad) << "member " << r << " named an honest one";
    if (r % 2 == kBad % 2) {
      EXPECT_EQ(clipped.named[r], std::vector<std::string>{clipped.bad}) << "member " << r << " of its group";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Attacks, OneByzantineOfEightInGroups,
                         ::testing::Values(AttackKind::kSignFlip, AttackKind::kScaled, AttackKind::kNonFinite,
                                           AttackKind::kStale),
                         [](const ::testing::TestParamInfo<AttackKind>& kind) {
                           return std::string(attack_name(kind.param));
                         });

TEST(NoByzantine, ClippedGossipNamesNoOneAndAveragesAsPlainCrossoverDoes) {
  const Outcome plain = run_with(std::nullopt, false, 60);
  const Outcome clipped = run_with(std::nullopt, true, 60);
  for (size_t r = 0; r < kMembers; ++r) {
    EXPECT_TRUE(clipped.named[r].empty()) << "member " << r << " named " << clipped.named[r].front();
    double d = 0;
    for (size_t i = 0; i < kValues; ++i) d = std::max(d, double(std::abs(plain.x[r][i] - clipped.x[r][i])));
    EXPECT_LT(d, 0.005) << "member " << r;  // the replicas' own parts are 0.01-sized
  }
}

}  // namespace
}  // namespace gossipd::protocol::robust
