#include "topology/hierarchy.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace gossipd::topology {
namespace {

TEST(Groups, FormedByLabelInAFixedOrder) {
  View v(1, {"w5", "w1", "w3", "w2", "w4", "w6"});
  std::map<std::string, std::string> labels{
      {"w1", "hostB"}, {"w2", "hostA"}, {"w3", "hostB"}, {"w4", "hostA"}, {"w5", "hostB"}};
  Groups g(v, labels);
  ASSERT_EQ(g.count(), 3u);
  EXPECT_EQ(g.members(0), (std::vector<std::string>{"w6"}));  // unlabelled: alone (sorts first)
  EXPECT_EQ(g.members(1), (std::vector<std::string>{"w2", "w4"}));
  EXPECT_EQ(g.members(2), (std::vector<std::string>{"w1", "w3", "w5"}));
  EXPECT_EQ(g.group_of("w3"), 2u);
  EXPECT_FALSE(g.group_of("nobody").has_value());
  EXPECT_EQ(g.segment_owner(2, 4, GroupSpread::kSpread), "w3");  // 4 mod 3 = 1
  EXPECT_EQ(g.segment_owner(2, 4, GroupSpread::kRoot), "w1");
  // Rotating: member (4 + round + (round / 3) * 2) mod 3, round by round.
  EXPECT_EQ(g.segment_owner(2, 4, GroupSpread::kRotate, 0), "w3");
  EXPECT_EQ(g.segment_owner(2, 4, GroupSpread::kRotate, 1), "w5");
  EXPECT_EQ(g.segment_owner(2, 4, GroupSpread::kRotate, 2), "w1");
  EXPECT_EQ(g.segment_owner(2, 4, GroupSpread::kRotate, 3), "w1");  // the next cycle: its phase 2 on
}

// Rotating owners, two groups of 4: in each cycle of 4 rounds every member
// owns a segment once, and over 4 cycles the owner of one group meets each
// member of the other as the owner of that segment (with one phase for every
// group, member k would meet member k alone, and a Byzantine one would set
// its partner's radius).
TEST(Groups, RotatingOwnersOwnEachSegmentOnceACycleAndMeetEveryMemberOfTheOtherGroup) {
  View v(1, {"a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3"});
  std::map<std::string, std::string> labels;
  for (const auto& id : v.members()) labels[id] = id.substr(0, 1);
  Groups g(v, labels);
  for (uint32_t seg = 0; seg < 5; ++seg) {
    std::map<std::string, std::set<std::string>> met;
    for (uint64_t cycle = 0; cycle < 4; ++cycle) {
      std::map<std::string, int> owned;
      for (uint64_t round = 4 * cycle; round < 4 * cycle + 4; ++round) {
        const std::string& a = g.segment_owner(0, seg, GroupSpread::kRotate, round);
        ++owned[a];
        ++owned[g.segment_owner(1, seg, GroupSpread::kRotate, round)];
        met[a].insert(g.segment_owner(1, seg, GroupSpread::kRotate, round));
      }
      EXPECT_EQ(owned.size(), 8u) << "segment " << seg << " cycle " << cycle;
    }
    for (const auto& [a, partners] : met) EXPECT_EQ(partners.size(), 4u) << a << " segment " << seg;
  }
}

TEST(Groups, InterGroupExchangeIsABalancedMatchingOfOwners) {
  View v(2, {"a1", "a2", "b1", "b2", "c1", "c2"});
  std::map<std::string, std::string> labels{{"a1", "A"}, {"a2", "A"}, {"b1", "B"},
                                            {"b2", "B"}, {"c1", "C"}, {"c2", "C"}};
  Groups g(v, labels);
  for (auto spread : {GroupSpread::kSpread, GroupSpread::kRoot, GroupSpread::kRotate}) {
    for (uint32_t seg = 0; seg < 8; ++seg) {
      std::map<std::string, int> sends, receives;
      for (const auto& id : v.members()) {
        auto e = inter_group_exchange(g, v.id(), id, 5, 11, seg, spread);
        if (!e) continue;
        EXPECT_NE(g.group_of(e->send_to), g.group_of(id));
        EXPECT_NE(g.group_of(e->receive_from), g.group_of(id));
        sends[e->send_to]++;
        receives[id]++;
        // The peer it sends to expects the segment from it.
        EXPECT_EQ(inter_group_exchange(g, v.id(), e->send_to, 5, 11, seg, spread)->receive_from, id);
      }
      EXPECT_EQ(receives.size(), 3u);  // one owner per group
      for (auto& [id, n] : sends) EXPECT_EQ(n, 1) << id;
    }
  }
  // Spread: both members of a group take part across segments.
  std::map<std::string, int> active;
  for (uint32_t seg = 0; seg < 4; ++seg) {
    for (const auto& id : v.members()) {
      if (inter_group_exchange(g, v.id(), id, 5, 11, seg, GroupSpread::kSpread)) active[id]++;
    }
  }
  EXPECT_EQ(active.size(), 6u);
  Groups single(v, {{"a1", "X"}, {"a2", "X"}, {"b1", "X"}, {"b2", "X"}, {"c1", "X"}, {"c2", "X"}});
  EXPECT_FALSE(inter_group_exchange(single, 0, "a1", 5, 11, 0, GroupSpread::kSpread).has_value());
}

}  // namespace
}  // namespace gossipd::topology
