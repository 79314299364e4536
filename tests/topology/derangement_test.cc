#include "topology/derangement.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

namespace gossipd::topology {
namespace {

bool is_derangement(const std::vector<uint32_t>& p) {
  std::set<uint32_t> seen(p.begin(), p.end());
  if (seen.size() != p.size() || (!p.empty() && *seen.rbegin() >= p.size())) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == i) return false;
  }
  return true;
}

TEST(Derangement, EveryDrawHasNoFixedPointAndIsAPermutation) {
  for (size_t n = 2; n <= 40; ++n) {
    for (uint64_t round = 0; round < 50; ++round) {
      auto p = derangement(n, 7, 1, round, static_cast<uint32_t>(n));
      ASSERT_EQ(p.size(), n);
      ASSERT_TRUE(is_derangement(p)) << "n=" << n << " round=" << round;
    }
  }
}

TEST(Derangement, SmallViews) {
  EXPECT_TRUE(derangement(0, 1, 0, 0, 0).empty());
  EXPECT_TRUE(derangement(1, 1, 0, 0, 0).empty());
  EXPECT_EQ(derangement(2, 1, 0, 5, 3), (std::vector<uint32_t>{1, 0}));  // the only one
  for (uint64_t r = 0; r < 20; ++r) {
    auto p = derangement(3, 1, 0, r, 0);  // one of the two 3-cycles
    EXPECT_TRUE(p == (std::vector<uint32_t>{1, 2, 0}) || p == (std::vector<uint32_t>{2, 0, 1}));
  }
  View one(0, {"a"});
  EXPECT_FALSE(crossover_exchange(one, 0, 1, 0, 0).has_value());
}

// Chi-square against the uniform distribution over the 44 derangements of 5.
TEST(Derangement, UniformOverAllDerangements) {
  std::map<std::vector<uint32_t>, int> counts;
  const int draws = 44 * 300;
  for (int i = 0; i < draws; ++i) counts[derangement(5, 123, 0, static_cast<uint64_t>(i), 0)]++;
  ASSERT_EQ(counts.size(), 44u);  // D(5) = 44: every derangement occurs
  const double expected = draws / 44.0;
  double chi2 = 0;
  for (auto& [p, c] : counts) chi2 += (c - expected) * (c - expected) / expected;
  // 43 degrees of freedom: P(chi2 > 77.4) = 0.001.
  EXPECT_LT(chi2, 77.4) << "chi-square " << chi2;
}

TEST(Derangement, FreshDrawPerSegmentRoundEpochAndSeed) {
  auto base = derangement(16, 1, 2, 3, 4);
  EXPECT_EQ(base, derangement(16, 1, 2, 3, 4));  // every member computes the same
  EXPECT_NE(base, derangement(16, 1, 2, 3, 5));
  EXPECT_NE(base, derangement(16, 1, 2, 4, 4));
  EXPECT_NE(base, derangement(16, 1, 3, 3, 4));
  EXPECT_NE(base, derangement(16, 2, 2, 3, 4));
}

TEST(Derangement, MembersAgreeAndDegreesAreOne) {
  View v(3, {"e", "a", "d", "c", "b", "f", "g"});
  for (uint32_t seg = 0; seg < 10; ++seg) {
    std::vector<int> in(v.size()), out(v.size());
    for (size_t self = 0; self < v.size(); ++self) {
      auto e = crossover_exchange(v, self, 99, 17, seg);
      ASSERT_TRUE(e.has_value());
      EXPECT_NE(e->send_to, self);
      EXPECT_NE(e->receive_from, self);
      out[self]++;
      in[e->send_to]++;
      // The receiver's view of the same exchange names self as its source.
      EXPECT_EQ(crossover_exchange(v, e->send_to, 99, 17, seg)->receive_from, self);
    }
    for (size_t i = 0; i < v.size(); ++i) {
      EXPECT_EQ(in[i], 1);
      EXPECT_EQ(out[i], 1);
    }
  }
}

TEST(View, SortsDeduplicatesAndFinds) {
  View v(4, {"b", "a", "b", "c"});
  EXPECT_EQ(v.members(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(v.index_of("c"), 2u);
  EXPECT_FALSE(v.contains("z"));
  EXPECT_THROW(View(0, {"a", ""}), std::invalid_argument);
  auto r = ring_neighbours(3, 0);
  EXPECT_EQ(r.left, 2u);
  EXPECT_EQ(r.right, 1u);
}

}  // namespace
}  // namespace gossipd::topology
