// --evict-byzantine in membership: accusations travel on the probes, a
// quorum of distinct accusers takes the accused out of every view, and it
// is refused from then on (daemon/cluster/membership_evict.cc), on members
// of the real membership code in one process (daemon/bench/inproc_cluster.h).
#include <gtest/gtest.h>

#include <chrono>

#include "daemon/bench/inproc_cluster.h"
#include "daemon/cluster/accusations.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using daemon::InProcCluster;

daemon::MembershipOptions fast_probes() {
  daemon::MembershipOptions o;
  o.heartbeat_interval = 50ms;
  o.failure_timeout = 1000ms;
  return o;
}

// True once every live member but `except` knows `n` accusers of `id`.
bool accusers_everywhere(InProcCluster& c, const std::string& id, size_t n, size_t except) {
  for (size_t i = 0; i < c.size(); ++i) {
    if (i != except && c.alive(i) && c.membership(i).accusers_of(id) != n) return false;
  }
  return true;
}

TEST(Accusations, CountsDistinctAccusersAndKeepsTheBan) {
  daemon::Accusations a(2);
  EXPECT_TRUE(a.add("w3", "w0"));
  EXPECT_FALSE(a.add("w3", "w0")) << "the same accuser twice counts once";
  EXPECT_TRUE(a.add("w3", "w1"));
  EXPECT_EQ(a.of("w3").size(), 2u);
  EXPECT_FALSE(a.add("w3", "w2")) << "no more accusers of one id than the capacity";
  EXPECT_TRUE(a.add("w4", "w0"));
  EXPECT_FALSE(a.add("w5", "w0")) << "no more accused ids than the capacity";
  EXPECT_TRUE(a.of("w5").empty());
  EXPECT_FALSE(a.banned("w3"));
  a.ban("w3");
  EXPECT_TRUE(a.banned("w3"));
  EXPECT_FALSE(a.banned("w4"));
}

// One accuser (an attacker accusing an honest member) is below the quorum
// of 2: its accusation reaches everyone and evicts nobody. A second accuser
// takes m5 out of every view; word of m5 alive afterwards, even of a later
// join of it, is refused.
TEST(EvictByzantine, OneAccuserEvictsNobodyAndASecondTakesTheAccusedOutOfEveryView) {
  InProcCluster c(6, fast_probes());
  for (size_t i = 0; i < 6; ++i) c.membership(i).evict_byzantine(2);
  c.arm_all();
  c.membership(0).accuse("m5");
  ASSERT_TRUE(wait_until([&] { return accusers_everywhere(c, "m5", 1, 6); }, 30s));
  EXPECT_TRUE(c.listed_everywhere("m5"));
  c.membership(1).accuse("m5");
  ASSERT_TRUE(wait_until(
      [&] {
        for (size_t i = 0; i < 5; ++i)
          if (c.membership(i).knows("m5")) return false;
        return true;
      },
      30s));
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(c.counter(i, "gossipd_byzantine_evicted_total"), 1) << "member " << i;
    EXPECT_EQ(c.counter(i, "gossipd_members_evicted_total"), 0) << "member " << i;
    EXPECT_EQ(c.membership(i).view().size(), 5u) << "member " << i;
  }
  EXPECT_TRUE(c.listed_everywhere("m4")) << "nobody else goes";

  proto::MemberUpdate back;
  back.set_kind(proto::MemberUpdate::ALIVE);
  back.mutable_member()->set_id("m5");
  back.mutable_member()->set_endpoint("inproc-hub://m5");
  back.mutable_member()->set_since_round(1000);  // a later join of the id
  const double stale_before = c.counter(3, "gossipd_member_updates_stale_total");
  proto::Envelope ping = InProcCluster::ping_from("m0", 77);
  *ping.mutable_probe()->add_updates() = back;
  ASSERT_TRUE(c.deliver(3, ping));
  ASSERT_TRUE(
      wait_until([&] { return c.counter(3, "gossipd_member_updates_stale_total") > stale_before; }, 30s));
  EXPECT_FALSE(c.membership(3).knows("m5"));
}

// Without --evict-byzantine (quorum 0) accusations travel, and nobody acts
// on them: the defence names, the operator decides.
TEST(EvictByzantine, WithoutTheFlagAccusationsTravelAndEvictNobody) {
  InProcCluster c(4, fast_probes());
  c.arm_all();
  c.membership(0).accuse("m3");
  c.membership(1).accuse("m3");
  ASSERT_TRUE(wait_until([&] { return accusers_everywhere(c, "m3", 2, 4); }, 30s));
  EXPECT_TRUE(c.listed_everywhere("m3"));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(c.counter(i, "gossipd_byzantine_evicted_total"), 0) << i;
}

}  // namespace
}  // namespace gossipd::testing
