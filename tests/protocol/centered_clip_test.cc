// AllReduce-SGD's and the hierarchy's defence (BTARD's aggregation):
// BlockGather, the all-to-all that hands each block's owner every member's
// copy of it, CenteredClip at the owner and the verdicts it passes, alone
// and composed with the allgather (RobustGroupMean) over the real ZeroMQ
// loopback transport, ranks as threads.
#include "protocol/robust/centered_clip.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "protocol/collectives/block_gather.h"
#include "protocol/collectives/collectives.h"
#include "protocol/gossip/robust_group_mean.h"
#include "protocol/robust/sum8.h"
#include "protocol/robust/verdicts.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol::centered {
namespace {

using testing::TestCluster;

const std::vector<std::string> kCopiesOf{"w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"};

// Eight copies of a block: a common mean plus N(0, 1) noise per copy.
std::vector<float> honest_rows(size_t width, uint64_t seed, std::vector<float>* mean = nullptr) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  std::vector<float> common(width), rows(kCopiesOf.size() * width);
  for (float& v : common) v = 3.0f * n01(rng);
  for (size_t i = 0; i < kCopiesOf.size(); ++i)
    for (size_t k = 0; k < width; ++k) rows[i * width + k] = common[k] + n01(rng);
  if (mean) {
    mean->assign(width, 0.0f);
    for (size_t i = 0; i < kCopiesOf.size(); ++i)
      for (size_t k = 0; k < width; ++k) (*mean)[k] += rows[i * width + k] / float(kCopiesOf.size());
  }
  return rows;
}

double distance(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  for (size_t k = 0; k < a.size(); ++k) s += double(a[k] - b[k]) * (a[k] - b[k]);
  return std::sqrt(s);
}

// A step's tally where the caller (members[own]) is the only owner whose
// verdicts are heard.
void tally_alone(CenteredClip& clip, std::span<const std::string> members, size_t own) {
  std::vector<std::optional<std::vector<uint8_t>>> by_owner(members.size());
  by_owner[own] = std::vector<uint8_t>(clip.verdicts().begin(), clip.verdicts().end());
  clip.tally(members, own, by_owner);
}

TEST(CenteredClip, HonestCopiesWithinTheRadiusGiveTheirMeanAndNoOneIsJudgedFar) {
  constexpr size_t kWidth = 4000;
  std::vector<float> mean;
  const auto rows = honest_rows(kWidth, 1, &mean);
  CenteredClip clip(ClipSpec{});
  std::vector<float> out(kWidth);
  clip.aggregate(kCopiesOf, 0, rows, out);
  EXPECT_LT(distance(out, mean), 1e-3 * std::sqrt(double(kWidth)));
  EXPECT_EQ(std::count(clip.verdicts().begin(), clip.verdicts().end(), 1), 0);
  tally_alone(clip, kCopiesOf, 0);
  EXPECT_TRUE(clip.end_round().empty());
  for (const auto& [peer, seen] : clip.judge().peers()) {
    EXPECT_EQ(seen.clipped, 0u) << peer;
    EXPECT_EQ(seen.received, 1u) << peer;
  }
  EXPECT_EQ(clip.judge().peers().count("w0"), 0u) << "the caller's own copy is never judged";
}

// A copy ×1000 moves the aggregate by at most τ/m per iteration; it is far
// every step, named after kNameAfter of them, and left out from then on.
TEST(CenteredClip, AScaledCopyMovesTheBlockByAtMostItsShareOfTauAndIsNamedThenLeftOut) {
  constexpr size_t kWidth = 4000;
  constexpr uint32_t kAfter = CenteredClip::kNameAfter;
  CenteredClip clip(ClipSpec{}, 3);
  std::vector<std::string> named;
  for (uint64_t step = 1; step <= kAfter + 1; ++step) {
    auto rows = honest_rows(kWidth, step);
    std::vector<float> honest(kWidth, 0.0f);
    for (size_t i = 0; i < kCopiesOf.size(); ++i) {
      if (i == 3) continue;
      for (size_t k = 0; k < kWidth; ++k) honest[k] += rows[i * kWidth + k] / 7.0f;
    }
    for (size_t k = 0; k < kWidth; ++k) rows[3 * kWidth + k] *= 1000.0f;
    std::vector<float> out(kWidth);
    clip.aggregate(kCopiesOf, 0, rows, out);
    const double tau = clip.last_tau();
    ASSERT_GT(tau, 0);
    if (named.empty()) {
      // The honest copies' mean over 7 against the aggregate over 8: the
      // attacker's share and the honest copies' weight differ by τ/8 per iteration.
      EXPECT_LT(distance(out, honest), 3 * tau / 8 + tau / 7) << "step " << step;
    } else {
      EXPECT_LT(distance(out, honest), 1e-3 * std::sqrt(double(kWidth))) << "a named member is left out";
    }
    EXPECT_EQ(clip.verdicts()[3], named.empty() ? 1 : 0) << "step " << step;
    tally_alone(clip, kCopiesOf, 0);
    for (const auto& n : clip.end_round()) named.push_back(n);
    EXPECT_EQ(named.empty(), step < kAfter) << "step " << step;
  }
  EXPECT_EQ(named, std::vector<std::string>{"w3"});
  for (const auto& [peer, seen] : clip.judge().peers())
    EXPECT_EQ(seen.clipped, peer == "w3" ? kAfter : 0u) << peer;
}

TEST(CenteredClip, ANonFiniteCopyIsRefusedAndCountedAgainstItsSenderButTheOwnOneIsNot) {
  constexpr size_t kWidth = 100;
  auto rows = honest_rows(kWidth, 2);
  rows[5 * kWidth + 7] = std::numeric_limits<float>::quiet_NaN();
  rows[0 * kWidth + 1] = std::numeric_limits<float>::infinity();
  CenteredClip clip(ClipSpec{});
  std::vector<float> out(kWidth);
  clip.aggregate(kCopiesOf, 0, rows, out);
  for (float v : out) ASSERT_TRUE(std::isfinite(v));
  EXPECT_EQ(clip.judge().peers().at("w5").refused, 1u);
  EXPECT_EQ(clip.judge().peers().at("w5").received, 0u);
  EXPECT_EQ(clip.verdicts()[5], 1) << "a copy refused is far";
  EXPECT_EQ(clip.verdicts()[0], 0) << "the own copy is never judged";
  EXPECT_EQ(clip.judge().peers().count("w0"), 0u);
  // Every copy refused: the block does not move.
  std::vector<float> bad(2 * kWidth, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> two(kWidth, 1.0f);
  clip.aggregate(std::vector<std::string>{"w0", "w1"}, 0, bad, two);
  EXPECT_EQ(two, std::vector<float>(kWidth, 0.0f));
}

TEST(CenteredClip, AFixedRadiusIsTheOneUsedAndBadShapesAreRefused) {
  constexpr size_t kWidth = 50;
  const auto rows = honest_rows(kWidth, 3);
  ClipSpec spec;
  spec.tau = 0.5;
  CenteredClip clip(spec);
  std::vector<float> out(kWidth);
  clip.aggregate(kCopiesOf, 2, rows, out);
  EXPECT_EQ(clip.last_tau(), 0.5);
  EXPECT_THROW(clip.aggregate(kCopiesOf, 2, std::span<const float>(rows).first(10), out),
               ProtocolConfigError);
  EXPECT_THROW(clip.aggregate(kCopiesOf, 8, rows, out), ProtocolConfigError);
  EXPECT_THROW(CenteredClip(ClipSpec{}, 0), ProtocolConfigError);
}

// Sum8 over ranges that start at multiples of 8 (the chunks CenteredClip
// measures in) gives the bits of one pass over all the terms.
TEST(Sum8, RangesStartingAtMultiplesOfEightGiveTheBitsOfOnePass) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n01(0.0, 1.0);
  for (size_t n : {5u, 8u, 1003u, 4096u}) {
    std::vector<double> terms(n);
    for (double& t : terms) t = std::exp(4 * n01(rng));  // magnitudes far apart: order shows
    const auto term = [&](size_t i) { return terms[i]; };
    Sum8 chunked;
    for (size_t begin = 0; begin < n; begin += 24) chunked.add(begin, std::min(n, begin + 24), term);
    EXPECT_EQ(chunked.total(), sum8(n, term)) << n << " terms";
  }
}

// The aggregate against the textbook form, a whole row at a time (median
// by sorting each coordinate, then full passes per iteration): the same
// bits for every width (the passes go by chunks of 512), with copies
// clipped in every iteration.
TEST(CenteredClip, ChunkedPassesGiveTheBitsOfWholeRowIterations) {
  for (size_t width : {1u, 511u, 1300u}) {
    for (size_t m : {5u, 8u}) {
      auto rows = honest_rows(width, width + m);
      rows.resize(m * width);
      for (size_t k = 0; k < width; ++k) rows[(m - 1) * width + k] *= 50.0f;
      const std::vector<std::string> members(kCopiesOf.begin(), kCopiesOf.begin() + static_cast<long>(m));
      CenteredClip clip(ClipSpec{}, 3);
      std::vector<float> out(width), v(width), column(m);
      clip.aggregate(members, 0, rows, out);
      for (size_t k = 0; k < width; ++k) {
        for (size_t i = 0; i < m; ++i) column[i] = rows[i * width + k];
        std::sort(column.begin(), column.end());
        v[k] = m % 2 ? column[m / 2] : 0.5f * (column[m / 2 - 1] + column[m / 2]);
      }
      std::vector<double> d(m);
      const auto measure = [&] {
        for (size_t i = 0; i < m; ++i)
          d[i] = ClippedGossip::distance(v, 1.0, std::span<const float>(rows).subspan(i * width, width), 1.0);
      };
      measure();
      const double tau = clip.last_tau();
      EXPECT_EQ(tau, 2 * quantile(d, 0.25));
      EXPECT_GT(d[m - 1], tau) << "the scaled copy is clipped";
      for (int it = 0; it < 3; ++it) {
        const bool clips = std::any_of(d.begin(), d.end(), [&](double x) { return x > tau; });
        std::vector<float> delta(width, 0.0f);
        for (size_t i = 0; i < m; ++i) {
          const float s = d[i] > tau ? static_cast<float>(tau / d[i]) : 1.0f;
          for (size_t k = 0; k < width; ++k) delta[k] += s * (rows[i * width + k] - v[k]);
        }
        for (size_t k = 0; k < width; ++k) v[k] += 1.0f / static_cast<float>(m) * delta[k];
        measure();
        if (!clips) break;  // v is the mean: another iteration changes nothing
      }
      EXPECT_EQ(out, v) << width << " floats, " << m << " copies";
    }
  }
}

// Each owner gets every rank's copy of its block, for even, uneven and
// empty blocks.
class BlockGatherTest : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(BlockGatherTest, EachOwnerHoldsEveryRanksCopyOfItsBlockInRankOrder) {
  const auto n = std::get<0>(GetParam());
  const auto count = std::get<1>(GetParam());
  TestCluster cluster(n);
  std::vector<std::vector<float>> rows(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 9, cluster.ids(), testing::small_pieces());
    const auto data = testing::rank_input(r, count);
    rows[r].resize(n * block_range(count, n, r).size());
    BlockGather(g, data).run(rows[r]);
  }));
  for (size_t owner = 0; owner < n; ++owner) {
    const BlockRange b = block_range(count, n, owner);
    for (size_t from = 0; from < n; ++from) {
      const auto data = testing::rank_input(from, count);
      for (size_t k = 0; k < b.size(); ++k)
        ASSERT_EQ(rows[owner][from * b.size() + k], data[b.begin + k]) << owner << " " << from << " " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, BlockGatherTest,
                         ::testing::Values(std::make_tuple(size_t{2}, size_t{1000}),
                                           std::make_tuple(size_t{3}, size_t{100001}),
                                           std::make_tuple(size_t{4}, size_t{3})));

// RobustGroupMean (BlockGather, CenteredClip at each owner and the
// allgather with the owners' verdicts; RobustAverage's and the hierarchy's
// step (1)), 8 ranks, w3 sending its vector ×1000 and w5 one far from the
// others in the block w6 owns alone: every rank ends each step with the
// same vector, near the honest ranks' mean, and every rank names w3, and
// only w3, at the same step.
TEST(RobustGroupMean, EveryRankEndsWithTheSameAggregateAndNamesTheSameMembersAtTheSameStep) {
  constexpr size_t n = 8, count = 20000;
  constexpr uint32_t kSteps = CenteredClip::kNameAfter + 2;
  TestCluster cluster(n);
  std::vector<std::vector<float>> out(n);
  std::vector<std::vector<std::vector<std::string>>> named(n, std::vector<std::vector<std::string>>(kSteps));
  std::vector<float> honest(count, 0.0f);
  std::vector<uint32_t> far_at(n, 0);  // steps in which each owner found w3 far
  uint32_t five_at_six = 0;            // steps in which w6 found w5 far
  const auto input = [&](size_t r) {
    auto v = testing::rank_input(r, count);
    for (size_t k = 0; k < count; ++k) v[k] = 0.001f * v[k] + 1.0f;
    if (r == 5)  // an honest member whose data sets one block apart
      for (size_t k = block_range(count, n, 6).begin; k < block_range(count, n, 6).end; ++k) v[k] += 0.5f;
    return v;
  };
  for (size_t r = 0; r < n; ++r) {
    if (r == 3) continue;
    const auto v = input(r);
    for (size_t k = 0; k < count; ++k) honest[k] += v[k] / 7.0f;
  }
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 11, cluster.ids(), testing::small_pieces());
    RobustGroupMean mean(ClipSpec{});
    for (uint32_t step = 0; step < kSteps; ++step) {
      auto sent = input(r);
      if (r == 3)
        for (float& v : sent) v *= 1000.0f;
      out[r].assign(count, 0.0f);
      mean.run(g, sent, out[r]);
      if (r != 3) far_at[r] += mean.clip().verdicts()[3];
      if (r == 6) five_at_six += mean.clip().verdicts()[5];
      named[r][step] = mean.end_round();
    }
  }));
  for (size_t r = 1; r < n; ++r) ASSERT_EQ(out[r], out[0]) << "rank " << r;
  const BlockRange six = block_range(count, n, 6);  // where w5's copy is clipped too
  std::fill(out[0].begin() + six.begin, out[0].begin() + six.end, 0.0f);
  std::fill(honest.begin() + six.begin, honest.begin() + six.end, 0.0f);
  EXPECT_LT(distance(out[0], honest), 0.01 * std::sqrt(double(count)));
  EXPECT_EQ(five_at_six, kSteps) << "w6 finds w5's copy of its block far every step";
  for (size_t r = 0; r < n; ++r) {
    if (r != 3) {
      EXPECT_EQ(far_at[r], CenteredClip::kNameAfter) << "w3 far at w" << r << " until named";
    }
    if (r == 3) continue;
    for (uint32_t step = 0; step < kSteps; ++step) {
      const auto expected = step + 1 == CenteredClip::kNameAfter ? std::vector<std::string>{cluster.ids()[3]}
                                                                 : std::vector<std::string>{};
      EXPECT_EQ(named[r][step], expected) << "rank " << r << ", step " << step;
    }
  }
}

// Every owner's verdicts, tallied: a member far at one owner of seven in
// every step is never named, one far at four of seven is named after
// kNameAfter steps, and an owner whose verdicts cannot be read has them
// counted against it as one refused copy (one far reception beside the
// others' verdicts on its copies).
TEST(CenteredClip, AMemberIsNamedByMostOfTheOwnersThatJudgedItNotByOne) {
  CenteredClip clip(ClipSpec{});
  std::vector<std::string> named;
  for (uint32_t step = 0; step < 3 * CenteredClip::kNameAfter; ++step) {
    std::vector<std::optional<std::vector<uint8_t>>> by_owner(kCopiesOf.size(),
                                                              std::vector<uint8_t>(kCopiesOf.size(), 0));
    (*by_owner[6])[5] = 1;                                // w5 far at w6 alone
    for (size_t o : {0, 1, 2, 4}) (*by_owner[o])[3] = 1;  // w3 far at four of seven
    by_owner[7] = std::nullopt;                           // w7's verdicts unreadable
    clip.tally(kCopiesOf, 0, by_owner);
    for (const auto& m : clip.end_round()) named.push_back(m + "@" + std::to_string(step));
  }
  const std::string at = std::to_string(CenteredClip::kNameAfter - 1);
  EXPECT_EQ(named, std::vector<std::string>{"w3@" + at});
  EXPECT_EQ(clip.judge().peers().at("w7").refused, 3 * CenteredClip::kNameAfter);
  std::vector<std::optional<std::vector<uint8_t>>> wrong(kCopiesOf.size(), std::vector<uint8_t>(3, 0));
  EXPECT_THROW(clip.tally(kCopiesOf, 0, wrong), ProtocolConfigError);
}

// The verdicts on the wire: 16 to a float, as the integer they make; a
// float that is no such integer, or a bit set past the last member, is
// refused as a whole.
TEST(Verdicts, EncodeAndDecodeRoundTripAndMalformedWordsAreRefused) {
  for (size_t members : {1, 8, 16, 17, 256}) {
    std::vector<uint8_t> far(members);
    for (size_t j = 0; j < members; ++j) far[j] = (j * 7 + members) % 3 == 0;
    std::vector<float> words(Verdicts::words(members));
    ASSERT_EQ(words.size(), (members + 15) / 16);
    Verdicts::encode(far, words);
    EXPECT_EQ(Verdicts::decode(words, members), far) << members << " members";
  }
  std::vector<float> two(2, 0.0f);  // 17..32 members
  EXPECT_TRUE(Verdicts::decode(two, 20).has_value());
  for (const float bad :
       {-1.0f, 0.5f, 65536.0f, std::numeric_limits<float>::quiet_NaN(),
        std::numeric_limits<float>::infinity(), 16.0f /* bit 4 of the 2nd word: member 20 */}) {
    two[1] = bad;
    EXPECT_FALSE(Verdicts::decode(two, 20).has_value()) << bad;
  }
  EXPECT_FALSE(Verdicts::decode(two, 40).has_value()) << "the wrong number of words";
}

}  // namespace
}  // namespace gossipd::protocol::centered
