// Membership's failure detection and dissemination (SWIM) on members of the
// real membership code in one process (daemon/bench/inproc_cluster.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "daemon/bench/inproc_cluster.h"
#include "daemon/cluster/probe_order.h"
#include "daemon/cluster/update_queue.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using daemon::InProcCluster;

proto::MemberUpdate update(const std::string& id, proto::MemberUpdate::Kind kind, uint64_t incarnation = 0) {
  proto::MemberUpdate u;
  u.set_kind(kind);
  u.mutable_member()->set_id(id);
  u.mutable_member()->set_incarnation(incarnation);
  return u;
}

TEST(UpdateQueue, TheLeastSentGoFirstAndEachIsForgottenAfterItsLimit) {
  daemon::UpdateQueue q;
  q.add(update("a", proto::MemberUpdate::SUSPECT));
  q.add(update("b", proto::MemberUpdate::ALIVE));
  auto first = q.take(1, 2);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].member().id(), "b") << "the newest among the unsent";
  EXPECT_EQ(q.take(1, 2)[0].member().id(), "a") << "then the one sent least";
  q.add(update("a", proto::MemberUpdate::DEAD));  // replaces a's suspicion, unsent again
  const auto both = q.take(5, 2);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].member().id(), "a");
  EXPECT_EQ(both[0].kind(), proto::MemberUpdate::DEAD);
  EXPECT_EQ(q.size(), 1u) << "b went out twice: forgotten";
  EXPECT_EQ(daemon::retransmit_limit(5), 4u);
  EXPECT_EQ(daemon::retransmit_limit(36), 8u);
  EXPECT_EQ(daemon::retransmit_limit(1000), 16u);
}

TEST(ProbeOrder, EveryMemberIsProbedOncePerPassAndOneGoneIsSkipped) {
  daemon::ProbeOrder order(7);
  std::vector<std::string> members{"a", "b", "c", "d"};
  const auto listed = [&](const std::string& id) {
    return std::find(members.begin(), members.end(), id) != members.end();
  };
  std::multiset<std::string> pass;
  for (int i = 0; i < 4; ++i) pass.insert(*order.next(members, listed));
  EXPECT_EQ(pass, (std::multiset<std::string>{"a", "b", "c", "d"}));
  members = {"a", "c"};
  for (int i = 0; i < 6; ++i) {
    const std::string next = *order.next(members, listed);
    EXPECT_TRUE(next == "a" || next == "c") << next;
  }
  EXPECT_FALSE(order.next({}, listed).has_value());
}

daemon::MembershipOptions quick() {
  daemon::MembershipOptions o;
  o.heartbeat_interval = 50ms;
  o.failure_timeout = 1000ms;
  return o;
}

TEST(Swim, AKilledMemberLeavesEveryViewAndNobodyElseIsEvicted) {
  InProcCluster c(8, quick());
  c.arm_all();
  c.kill(5);
  ASSERT_TRUE(wait_until([&] { return c.dropped_everywhere("m5"); }, 30s));
  for (size_t i = 0; i < 8; ++i) {
    if (!c.alive(i)) continue;
    EXPECT_EQ(c.counter(i, "gossipd_members_evicted_total"), 1) << "member " << i;
    EXPECT_EQ(c.lost(i), "") << "member " << i;
    EXPECT_EQ(c.membership(i).view().size(), 7u) << "member " << i;
  }
}

// m2 and m3 were admitted at once through different contacts (as a
// partition's other half rejoins): each holds its admitter's table, which
// lacks the other, and each one's announcement has passed. Founders push
// and pull tables once an hour here; a joiner's first exchange, a few
// periods after it enters, brings each the other.
TEST(Swim, TwoMembersAdmittedAtOnceThroughOthersLearnEachOtherWithinAFewPeriods) {
  daemon::MembershipOptions o = quick();
  o.push_pull_interval = std::chrono::hours(1);
  InProcCluster c(4, o, [](size_t i, proto::Member& self, std::map<std::string, std::string>& peers) {
    if (i < 2) return;
    self.set_since_round(10);
    peers.erase(InProcCluster::id(i == 2 ? 3 : 2));
  });
  ASSERT_FALSE(c.membership(2).knows("m3"));
  ASSERT_FALSE(c.membership(3).knows("m2"));
  c.arm_all();
  EXPECT_TRUE(wait_until([&] { return c.membership(2).knows("m3") && c.membership(3).knows("m2"); }, 30s))
      << "m2 knows m3: " << c.membership(2).knows("m3") << ", m3 knows m2: " << c.membership(3).knows("m2");
  EXPECT_TRUE(c.listed_everywhere("m2") && c.listed_everywhere("m3"));
}

// Word that m1 is suspected reaches every member, m1 included: it refutes
// with a higher incarnation, which every member takes, and nobody evicts it.
TEST(Swim, ASuspectedMemberRefutesAndStays) {
  InProcCluster c(6, quick());
  c.arm_all();
  proto::Envelope env = InProcCluster::ping_from("m2", 99);
  *env.mutable_probe()->add_updates() = update("m1", proto::MemberUpdate::SUSPECT);
  for (size_t i = 0; i < 6; ++i) {
    if (i == 2) continue;
    ASSERT_TRUE(c.deliver(i, env));
  }
  ASSERT_TRUE(wait_until([&] { return c.counter(1, "gossipd_suspicions_refuted_total") >= 1; }, 30s));
  // Every member holds m1 at the refuting incarnation: the suspicion is over everywhere.
  ASSERT_TRUE(wait_until(
      [&] {
        for (size_t i = 0; i < 6; ++i) {
          if (i == 1) continue;
          const proto::MemberList table = c.membership(i).members();
          for (const auto& m : table.members())
            if (m.id() == "m1" && m.incarnation() < 1) return false;
        }
        return true;
      },
      30s));
  EXPECT_TRUE(c.listed_everywhere("m1"));
  // Stale words now: the suspicion m1 refuted, and the death of a join of
  // m3 that never was. Dropped and counted; nobody is evicted by them.
  env.mutable_probe()->clear_updates();
  *env.mutable_probe()->add_updates() = update("m1", proto::MemberUpdate::SUSPECT, 0);
  proto::MemberUpdate ghost = update("m3", proto::MemberUpdate::DEAD, 5);
  ghost.mutable_member()->set_since_round(99);
  *env.mutable_probe()->add_updates() = ghost;
  const double stale_before = c.counter(0, "gossipd_member_updates_stale_total");
  ASSERT_TRUE(c.deliver(0, env));
  ASSERT_TRUE(wait_until(
      [&] { return c.counter(0, "gossipd_member_updates_stale_total") >= stale_before + 2; }, 30s));
  EXPECT_TRUE(c.listed_everywhere("m3"));
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(c.counter(i, "gossipd_members_evicted_total"), 0) << "member " << i;
}

// A member that hears from none of its peers (they all died at once here;
// or they evicted it while it was paused) says so instead of evicting them
// one by one and training on alone.
TEST(Swim, AMemberCutOffFromEveryPeerSaysSoAndEvictsNobody) {
  InProcCluster c(4, quick());
  c.arm_all();
  for (size_t i = 1; i < 4; ++i) c.kill(i);
  ASSERT_TRUE(wait_until([&] { return !c.lost(0).empty(); }, 30s));
  EXPECT_NE(c.lost(0).find("heard from none of its 3 peers for 1000 ms"), std::string::npos) << c.lost(0);
  EXPECT_EQ(c.counter(0, "gossipd_members_evicted_total"), 0);
}

// Lifeguard's local health: a member whose own sends are lost (a starved
// or half-broken host) finds every probe it sends unanswered. Without local
// health it suspects its peers one every two periods; with it, each
// unanswered probe stretches its own period, so it raises fewer false
// suspicions meanwhile. Two clusters side by side under the same load, the
// failure timeout long enough that nobody is evicted meanwhile; once its
// sends go through again its score falls back to 0.
TEST(Swim, AMemberWhoseProbesAllFailStretchesItsPeriodAndSuspectsFewer) {
  daemon::MembershipOptions o;
  o.heartbeat_interval = 20ms;
  o.failure_timeout = 60s;
  daemon::MembershipOptions off = o;
  off.max_local_health = 0;
  InProcCluster with(16, o), without(16, off);
  with.arm_all();
  without.arm_all();
  with.hub().mute("m0");
  without.hub().mute("m0");
  const char* suspected = "gossipd_members_suspected_total";
  ASSERT_TRUE(wait_until([&] { return without.counter(0, suspected) >= 15; }, 30s));
  const double fewer = with.counter(0, suspected);
  std::printf("[ measured ] with local health: %.0f suspicions (score %.0f) while without: 15\n", fewer,
              with.gauge(0, "gossipd_member_local_health"));
  EXPECT_LE(fewer, 7) << "against 15 without local health";
  EXPECT_GE(with.gauge(0, "gossipd_member_local_health"), 3);
  EXPECT_EQ(without.gauge(0, "gossipd_member_local_health"), 0);
  for (size_t i = 1; i < 16; ++i)
    EXPECT_LE(with.gauge(i, "gossipd_member_local_health"), 2) << "a healthy member " << i;
  with.hub().mute("m0", false);
  EXPECT_TRUE(wait_until([&] { return with.gauge(0, "gossipd_member_local_health") == 0; }, 30s));
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(with.counter(i, "gossipd_members_evicted_total"), 0) << i;
}

}  // namespace
}  // namespace gossipd::testing
