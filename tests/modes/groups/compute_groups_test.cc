#include "daemon/modes/groups/compute_groups.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "topology/hierarchy.h"

namespace gossipd::topology {
namespace {

TEST(ComputeGroups, ConsecutiveRanksOfTheSortedMembersShareAGroup) {
  const auto labels = compute_group_labels({"w3", "w0", "w5", "w1", "w4", "w2"}, 3);
  ASSERT_EQ(labels.size(), 6u);
  EXPECT_EQ(labels.at("w0"), compute_group_label(0));
  EXPECT_EQ(labels.at("w1"), compute_group_label(0));
  EXPECT_EQ(labels.at("w2"), compute_group_label(1));
  EXPECT_EQ(labels.at("w3"), compute_group_label(1));
  EXPECT_EQ(labels.at("w4"), compute_group_label(2));
  EXPECT_EQ(labels.at("w5"), compute_group_label(2));
}

TEST(ComputeGroups, GroupsOrderByIndexPastNine) {
  const std::vector<std::string> members{"ma", "mb", "mc", "md", "me", "mf",
                                         "mg", "mh", "mi", "mj", "mk", "ml"};
  const auto labels = compute_group_labels(members, 12);
  const Groups groups(View(1, members), labels);
  ASSERT_EQ(groups.count(), 12u);
  for (size_t g = 0; g < 12; ++g) EXPECT_EQ(groups.members(g), std::vector<std::string>{members[g]});
}

TEST(ComputeGroups, OneGroupIsEveryMemberAndEveryMemberItsOwnIsN) {
  const std::vector<std::string> m{"a", "b", "c", "d"};
  for (const auto& [id, label] : compute_group_labels(m, 1)) EXPECT_EQ(label, compute_group_label(0)) << id;
  const auto each = compute_group_labels(m, 4);
  EXPECT_EQ(each.at("d"), compute_group_label(3));
}

TEST(ComputeGroups, ACountThatDoesNotDivideIsRefusedWithTheReason) {
  try {
    compute_group_labels({"a", "b", "c", "d"}, 3);
    FAIL() << "3 groups of 4 workers accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "3 compute groups do not divide 4 workers into groups of equal size");
  }
  EXPECT_THROW(compute_group_labels({"a"}, 0), std::invalid_argument);
}

// --compute-group-order (gossipctl tune lists the members fastest first):
// consecutive members of the order share a group; an order that is not the
// members is refused.
TEST(ComputeGroups, AnOrderGivesItsConsecutiveMembersOneGroup) {
  const auto labels = compute_group_labels({"w0", "w1", "w2", "w3"}, 2, {"w1", "w3", "w0", "w2"});
  EXPECT_EQ(labels.at("w1"), compute_group_label(0));
  EXPECT_EQ(labels.at("w3"), compute_group_label(0));
  EXPECT_EQ(labels.at("w0"), compute_group_label(1));
  EXPECT_EQ(labels.at("w2"), compute_group_label(1));
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"w1", "w3", "w0"}, {"w1", "w3", "w0", "w0"}, {"w1", "w3", "w0", "w9"}})
    EXPECT_THROW(compute_group_labels({"w0", "w1", "w2", "w3"}, 2, bad), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::topology
