// SWIM's suspicion timers on their own (daemon/cluster/suspicions.h): time
// is passed in, nothing sleeps.
#include "daemon/cluster/suspicions.h"

#include <gtest/gtest.h>

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using daemon::Suspicions;
using Ids = std::vector<std::string>;

TEST(Suspicions, ASuspectExpiresAtItsDeadlineUnlessItRefutes) {
  Suspicions s;
  const auto t0 = Suspicions::Clock::time_point{} + 1h;
  EXPECT_TRUE(s.mark("b", t0 + 3s));
  EXPECT_TRUE(s.mark("a", t0 + 1s));
  EXPECT_TRUE(s.mark("c", t0 + 2s));
  EXPECT_EQ(s.expired(t0), Ids{});
  EXPECT_EQ(s.expired(t0 + 2s), (Ids{"a", "c"}));  // at the deadline, in id order
  s.refute("c");
  EXPECT_FALSE(s.suspected("c"));
  EXPECT_EQ(s.expired(t0 + 10s), (Ids{"a", "b"}));
  EXPECT_TRUE(s.suspected("a"));  // expired, still suspected until the caller evicts it
}

TEST(Suspicions, HearingASuspicionAgainKeepsItsFirstDeadline) {
  Suspicions s;
  const auto t0 = Suspicions::Clock::time_point{} + 1h;
  EXPECT_TRUE(s.mark("a", t0 + 1s));
  EXPECT_FALSE(s.mark("a", t0 + 5s));
  EXPECT_EQ(s.expired(t0 + 1s), Ids{"a"});
  s.refute("a");
  EXPECT_TRUE(s.mark("a", t0 + 5s));  // a new suspicion after a refutation starts afresh
  EXPECT_EQ(s.expired(t0 + 1s), Ids{});
}

TEST(Suspicions, APauseOfThisMemberPostponesEveryDeadline) {
  Suspicions s;
  const auto t0 = Suspicions::Clock::time_point{} + 1h;
  s.mark("a", t0 + 1s);
  s.mark("b", t0 + 2s);
  s.postpone(4s);
  EXPECT_EQ(s.expired(t0 + 4s), Ids{});
  EXPECT_EQ(s.expired(t0 + 5s), Ids{"a"});
  s.clear();
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(s.expired(t0 + 1h), Ids{});
}

}  // namespace
}  // namespace gossipd::testing
