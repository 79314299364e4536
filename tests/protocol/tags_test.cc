#include "protocol/wire/tags.h"

#include <gtest/gtest.h>

namespace gossipd::protocol {
namespace {

using tags::Range;
using tags::User;

std::vector<User> all_users() {
  std::vector<User> users;
  for (size_t u = 0; u < static_cast<size_t>(User::kCount); ++u) users.push_back(static_cast<User>(u));
  return users;
}

TEST(Tags, NoTwoUsersRangesMeet) {
  const auto users = all_users();
  for (size_t a = 0; a < users.size(); ++a) {
    for (size_t b = a + 1; b < users.size(); ++b) {
      EXPECT_FALSE(tags::range(users[a]).meets(tags::range(users[b]))) << "users " << a << " and " << b;
    }
  }
}

TEST(Tags, EveryRangeHasItsSizeAlignedAndLeavesTagZeroUnused) {
  for (User u : all_users()) {
    const Range r = tags::range(u);
    EXPECT_EQ(r.count, uint32_t{1} << tags::kRangeBits[static_cast<size_t>(u)]);
    EXPECT_EQ(r.first % r.count, 0u) << "aligned to its size";
    EXPECT_FALSE(r.contains(0));
    EXPECT_LE(uint64_t{r.first} + r.count, uint64_t{1} << 32);
  }
}

TEST(Tags, PacingNotesStayInTheirGossipProtocolsRange) {
  for (User u : {User::kCrossover, User::kHierarchical, User::kPushSum}) {
    const Range r = tags::range(u);
    EXPECT_TRUE(r.contains(tags::ready_tag(r.first)));
    EXPECT_NE(tags::ready_tag(r.first), r.first);
  }
}

TEST(Tags, PerViewTagsWrapInsideTheirRange) {
  for (User u : {User::kConsensus, User::kReformedRing, User::kFinalAverage, User::kHierarchicalGroup}) {
    const Range r = tags::range(u);
    for (uint64_t view : {uint64_t{0}, uint64_t{1}, uint64_t{0xffffffff}, uint64_t{0xffffffff} << 8 | 0xff}) {
      EXPECT_TRUE(r.contains(r.at(view))) << view;
    }
    EXPECT_EQ(r.at(r.count), r.at(0)) << "indices wrap";
  }
}

}  // namespace
}  // namespace gossipd::protocol
