// SWIM's failure detector as a state machine (daemon/cluster/prober.h):
// each step is given the time and returns what to send; nothing sleeps,
// nothing is sent.
#include "daemon/cluster/prober.h"

#include <gtest/gtest.h>

#include <set>

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using daemon::Prober;
using Outcome = Prober::Outcome;

const auto probe_t0 = Prober::Clock::time_point{} + 1h;
const std::vector<std::string> kPeers{"a", "b", "c"};
bool listed(const std::string&) { return true; }

TEST(Prober, AnUnansweredProbeGoesIndirectAfterTheTimeoutAndIsUnansweredAfterTwoPeriods) {
  Prober p(1);
  const auto ping = p.start(probe_t0, kPeers, listed);
  ASSERT_TRUE(ping);
  EXPECT_EQ(ping->type, proto::PING);
  EXPECT_EQ(p.indirect_at(100ms), probe_t0 + 100ms);
  EXPECT_FALSE(p.indirect(probe_t0 + 99ms, 100ms));
  const auto due = p.indirect(probe_t0 + 100ms, 100ms);
  ASSERT_TRUE(due);
  EXPECT_EQ(due->target, ping->to);
  EXPECT_EQ(due->seq, ping->seq);
  EXPECT_FALSE(p.indirect(probe_t0 + 150ms, 100ms));  // once
  EXPECT_FALSE(p.indirect_at(100ms));
  EXPECT_EQ(p.end(probe_t0 + 399ms, 200ms, true).outcome, Outcome::kWaiting);
  const auto end = p.end(probe_t0 + 400ms, 200ms, true);
  EXPECT_EQ(end.outcome, Outcome::kUnanswered);
  EXPECT_EQ(end.target, ping->to);
  EXPECT_EQ(p.end(probe_t0 + 400ms, 200ms, true).outcome, Outcome::kFree);  // over
}

TEST(Prober, OnlyAnAckFromTheTargetWithTheProbesNumberAnswersIt) {
  Prober p(1);
  const auto ping = p.start(probe_t0, kPeers, listed);
  ASSERT_TRUE(ping);
  const std::string other = ping->to == "a" ? "b" : "a";
  EXPECT_FALSE(p.ack(ping->seq + 7, ping->to, ""));  // another number
  EXPECT_FALSE(p.ack(ping->seq, other, ""));         // another member
  EXPECT_EQ(p.end(probe_t0 + 1s, 200ms, true).outcome, Outcome::kUnanswered);
  const auto next = p.start(probe_t0 + 1s, kPeers, listed);
  ASSERT_TRUE(next);
  EXPECT_FALSE(p.ack(next->seq, "helper", next->to));  // relayed by a helper, about the target
  EXPECT_FALSE(p.indirect_at(100ms));
  EXPECT_EQ(p.end(probe_t0 + 1s, 200ms, true).outcome, Outcome::kAcked);
}

TEST(Prober, APingSentForAnothersRequestRelaysItsAckUntilItExpires) {
  Prober p(1);
  const auto ping = p.relay("asker", 42, "c", probe_t0 + 200ms);
  EXPECT_EQ(ping.type, proto::PING);
  EXPECT_EQ(ping.to, "c");
  const auto ack = p.ack(ping.seq, "c", "");
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->type, proto::ACK);
  EXPECT_EQ(ack->to, "asker");
  EXPECT_EQ(ack->seq, 42u);
  EXPECT_EQ(ack->target, "c");
  EXPECT_FALSE(p.ack(ping.seq, "c", ""));  // once
  const auto late = p.relay("asker", 43, "c", probe_t0 + 200ms);
  p.start(probe_t0 + 200ms, kPeers, listed);  // a new period forgets the relays that expired
  EXPECT_FALSE(p.ack(late.seq, "c", ""));
}

TEST(Prober, EveryPeerIsProbedOncePerPassAndNoneWithoutPeersOrUnarmed) {
  Prober p(3);
  EXPECT_FALSE(p.start(probe_t0, {}, listed));
  std::set<std::string> seen;
  uint64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    const auto ping = p.start(probe_t0, kPeers, listed);
    ASSERT_TRUE(ping);
    EXPECT_GT(ping->seq, last);
    last = ping->seq;
    seen.insert(ping->to);
  }
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(p.end(probe_t0 + 1h, 200ms, false).outcome, Outcome::kFree);  // not armed: held against nobody
  p.start(probe_t0, kPeers, listed);
  p.reset();
  EXPECT_EQ(p.end(probe_t0 + 1h, 200ms, true).outcome, Outcome::kFree);
}

}  // namespace
}  // namespace gossipd::testing
