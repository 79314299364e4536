// The members evicted for silence, looked for after a partition
// (daemon/cluster/parted_members.h): time is passed in, nothing is sent.
#include "daemon/cluster/parted_members.h"

#include <gtest/gtest.h>

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using daemon::PartedMembers;
using Ids = std::vector<std::string>;

const auto parted_t0 = PartedMembers::Clock::time_point{} + 1h;
bool nowhere(const std::string&) { return false; }

TEST(PartedMembers, EachIsLookedForInTurn) {
  PartedMembers p(8, 10min);
  EXPECT_FALSE(p.next());
  p.evicted("b", "tcp://b", parted_t0);
  p.evicted("a", "tcp://a", parted_t0);
  p.evicted("c", "tcp://c", parted_t0);
  Ids seen;
  for (int i = 0; i < 4; ++i) seen.push_back(p.next()->id);
  EXPECT_EQ(seen, (Ids{"a", "b", "c", "a"}));
  EXPECT_EQ(p.endpoint("b"), "tcp://b");
  EXPECT_FALSE(p.endpoint("d"));
  EXPECT_EQ(p.contacts("b"), (Ids{"tcp://b", "tcp://a", "tcp://c"}));  // the one that answered first
}

TEST(PartedMembers, OneBackInTheTableOrGoneLongerThanTheWindowIsForgotten) {
  PartedMembers p(8, 10min);
  p.evicted("a", "tcp://a", parted_t0);
  p.evicted("b", "tcp://b", parted_t0 + 1min);
  p.evicted("c", "tcp://c", parted_t0 + 1min);
  EXPECT_EQ(p.forget(parted_t0 + 10min, nowhere), Ids{});  // the window's end itself still counts
  EXPECT_EQ(p.forget(parted_t0 + 10min + 1ms, [](const std::string& id) { return id == "c"; }),
            (Ids{"a", "c"}));
  EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(p.next()->id, "b");
}

TEST(PartedMembers, NoneBeyondItsCapacity) {
  PartedMembers p(2, 10min);
  p.evicted("a", "tcp://a", parted_t0);
  p.evicted("b", "tcp://b", parted_t0);
  p.evicted("c", "tcp://c", parted_t0);
  EXPECT_EQ(p.size(), 2u);
  EXPECT_FALSE(p.endpoint("c"));
  p.evicted("a", "tcp://a2", parted_t0);  // full: not even an update
  EXPECT_EQ(p.endpoint("a"), "tcp://a");
}

}  // namespace
}  // namespace gossipd::testing
