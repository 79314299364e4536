// gossipctl simulate's time model (daemon/sim/time_model.h) on the traffic
// the modes say a round sends (Mode::traffic): each case computed by hand
// from the alpha-beta links.
#include "daemon/sim/time_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/worker/mode_set.h"
#include "protocol/collectives/collectives.h"
#include "topology/derangement.h"
#include "topology/view.h"

namespace gossipd::daemon {
namespace {

constexpr double kStep = 0.010, kLatency = 0.001, kRate = 1e6;  // 10 ms, 1 ms, 1 MB/s

TrafficContext context(size_t members, size_t segments, size_t floats) {
  TrafficContext c;
  for (size_t i = 0; i < members; ++i) c.members.push_back("w" + std::to_string(i));
  c.members = topology::View(0, c.members).members();
  c.labels.assign(members, "");
  for (size_t s = 0; s < segments; ++s) c.segments.push_back({s * floats, floats});
  return c;
}

std::unique_ptr<RoundTraffic> traffic(const std::string& mode, const TrafficContext& c,
                                      const std::vector<std::string>& flags = {}) {
  ModeSet modes;
  modes.find(mode).configure(flags);
  return modes.find(mode).traffic(c);
}

TimeModelOptions uniform(size_t members) {
  TimeModelOptions o;
  o.step_s = kStep;
  o.links.assign(members, LinkModel{kLatency, kRate, 0});
  o.compute.assign(members, 1.0);
  return o;
}

double message_s(size_t floats) { return static_cast<double>(floats * 4 + kModelledEnvelopeBytes) / kRate; }

TEST(TimeModel, ACrossoverRoundIsTheStepThenEverySegmentOverTheLinkThenOneLatency) {
  const TrafficContext c = context(8, 4, 1000);
  const auto t = traffic("crossover", c);
  TimeModel model(uniform(8));
  const ModelledRound r = model.run_round(1, t->round(1));
  // Each member sends its 4 segments back to back and receives one of each
  // from 4 others, each as its sender finishes it.
  EXPECT_NEAR(r.slowest_s, kStep + 4 * message_s(1000) + kLatency, 1e-12);
  for (double clock : model.clocks()) EXPECT_NEAR(clock, r.slowest_s, 1e-12);
  EXPECT_EQ(r.bytes_sent, 8u * 4u * (4000u + kModelledEnvelopeBytes));
  EXPECT_EQ(r.skipped, 0u);
}

TEST(TimeModel, AnAllReduceTakesTheStepsOfTheScheduleItsSizeGets) {
  // 3 members: the ring, 2 (n - 1) steps of a third each.
  const TrafficContext three = context(3, 1, 30000);
  ASSERT_EQ(protocol::allreduce_schedule(30000, 3), protocol::AllreduceSchedule::kRing);
  TimeModel ring(uniform(3));
  EXPECT_NEAR(ring.run_round(1, traffic("allreduce", three)->round(1)).slowest_s,
              kStep + 4 * (kLatency + 40000.0 / kRate), 1e-12);
  // 4 members, 400 KB: the butterfly, 2 log2 4 latencies and 2 (n - 1) / n of the bytes.
  const TrafficContext four = context(4, 2, 50000);
  ASSERT_EQ(protocol::allreduce_schedule(100000, 4), protocol::AllreduceSchedule::kButterfly);
  TimeModel butterfly(uniform(4));
  const ModelledRound r = butterfly.run_round(1, traffic("allreduce", four)->round(1));
  EXPECT_NEAR(r.slowest_s, kStep + 4 * kLatency + 1.5 * 400000.0 / kRate, 1e-12);
  EXPECT_EQ(r.bytes_sent, 4u * 600000u);
}

// Four members on two hosts (`host`), each host's network link kRate and
// their own link between members of one host 10x faster.
TimeModelOptions two_hosts(std::vector<uint32_t> host) {
  TimeModelOptions o;
  o.step_s = kStep;
  o.links.assign(2, LinkModel{kLatency, kRate, 0});
  o.host = std::move(host);
  o.host_link = LinkModel{kLatency / 10, 10 * kRate, 0};
  return o;
}

TEST(TimeModel, AnAllReduceSpanningHostsLoadsEachHostsLinkWithWhatItsMembersSendAcross) {
  // 4 members, a ring of a million floats: 2 (n - 1) steps, each member
  // sending 1.5x the 4 MB.
  ASSERT_EQ(protocol::allreduce_schedule(1000000, 4), protocol::AllreduceSchedule::kRing);
  const TrafficStage ring = one_allreduce(4, 4000000);
  const double bytes_each = 1.5 * 4000000;
  // Members 0, 1 on host 0 and 2, 3 on host 1: the ring 0 1 2 3 crosses
  // twice, once out of each host.
  TimeModel halves(two_hosts({0, 0, 1, 1}));
  EXPECT_NEAR(halves.run_round(1, {ring}).slowest_s, kStep + 6 * kLatency + bytes_each / kRate, 1e-12);
  // Dealt 0 1 0 1: every edge crosses, two out of each host at once.
  TimeModel dealt(two_hosts({0, 1, 0, 1}));
  EXPECT_NEAR(dealt.run_round(1, {ring}).slowest_s, kStep + 6 * kLatency + 2 * bytes_each / kRate, 1e-12);
  // All on one host: its own link only.
  TimeModelOptions one = two_hosts({0, 0, 0, 0});
  TimeModel together(one);
  EXPECT_NEAR(together.run_round(1, {ring}).slowest_s,
              kStep + 6 * one.host_link.latency_s + bytes_each / one.host_link.bytes_per_s, 1e-12);
}

TEST(TimeModel, MembersOfOneHostShareItsLinkAndTalkToEachOtherOverTheHostsOwn) {
  TrafficStage st;
  st.messages = {{0, 2, 100000, 0}, {1, 3, 100000, 0}, {2, 3, 100000, 0}};
  const TimeModelOptions o = two_hosts({0, 0, 1, 1});
  TimeModel model(o);
  model.run_round(1, {st});
  // 0 and 1 share host 0's uplink: 0's message goes first, 1's behind it;
  // host 1's downlink takes them as they come.
  EXPECT_NEAR(model.clocks()[2], kStep + 0.1 + kLatency, 1e-12);
  // Member 3 waits for 1's (second on the shared link) and 2's (host 1's own link).
  EXPECT_NEAR(model.clocks()[3], kStep + 0.2 + kLatency, 1e-12);
  TimeModel own(o);
  TrafficStage inside;
  inside.messages = {{2, 3, 100000, 0}};
  own.run_round(1, {inside});
  EXPECT_NEAR(own.clocks()[3], kStep + 0.01 + o.host_link.latency_s, 1e-12);
}

TEST(TimeModel, AStragglerDelaysExactlyTheMembersItSendsTo) {
  const TrafficContext c = context(8, 3, 1000);
  const auto t = traffic("crossover", c);
  TimeModelOptions o = uniform(8);
  o.compute[5] = 4.0;
  TimeModel model(o);
  model.run_round(1, t->round(1));
  std::vector<bool> hears_from_straggler(8, false);
  const uint32_t view = topology::starting_view(c.members).id();  // as the members' membership names it
  for (uint32_t s = 0; s < 3; ++s) hears_from_straggler[topology::derangement(8, 1, view, 1, s)[5]] = true;
  for (size_t k = 0; k < 8; ++k) {
    if (k == 5) {
      EXPECT_NEAR(model.clocks()[k], 4 * kStep, 1e-12);  // what it was sent came long before
    } else if (hears_from_straggler[k]) {
      EXPECT_GT(model.clocks()[k], 4 * kStep) << k;
    } else {
      EXPECT_NEAR(model.clocks()[k], kStep + 3 * message_s(1000) + kLatency, 1e-12) << k;
    }
  }
}

TEST(TimeModel, WhatMissesTheDeadlineOrIsDroppedIsSkippedAndWaitedForUntilTheDeadline) {
  const TrafficContext c = context(4, 2, 1000);
  const auto t = traffic("crossover", c);
  TimeModelOptions o = uniform(4);
  o.deadline_s = 0.015;          // the others' two segments take 9.2 ms
  o.links[0].bytes_per_s = 1e5;  // 41 ms a segment, in and out
  TimeModel late(o);
  const ModelledRound r = late.run_round(1, t->round(1));
  // Member 0's two sends and the two it receives are late, named by round,
  // sender, receiver and segment as the derangement of each segment says.
  EXPECT_EQ(r.skipped, 4u);
  EXPECT_NEAR(late.clocks()[0], kStep + o.deadline_s, 1e-12);
  ASSERT_EQ(r.lost.size(), 4u);
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> lost, expected;
  for (const LostMessage& m : r.lost) {
    EXPECT_EQ(m.round, 1u);
    lost.emplace_back(m.segment, m.from, m.to);
  }
  const topology::View view = topology::starting_view(c.members);
  for (uint32_t s = 0; s < 2; ++s) {
    const auto to = topology::derangement(4, c.seed, view.id(), 1, s);
    for (uint32_t i = 0; i < 4; ++i) {
      if (i == 0 || to[i] == 0) expected.emplace_back(s, i, static_cast<uint32_t>(to[i]));
    }
  }
  std::sort(lost.begin(), lost.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(lost, expected);

  TimeModelOptions lossy = uniform(4);
  lossy.drop_rate = 0.5;
  TimeModel a(lossy), b(lossy);
  uint64_t skipped_a = 0, skipped_b = 0;
  for (uint64_t round = 1; round <= 50; ++round) {
    skipped_a += a.run_round(round, t->round(round)).skipped;
    skipped_b += b.run_round(round, t->round(round)).skipped;
  }
  EXPECT_EQ(skipped_a, skipped_b);  // drawn from the seed
  EXPECT_GT(skipped_a, 4u * 2u * 50u / 4u);
  EXPECT_LT(skipped_a, 4u * 2u * 50u * 3u / 4u);
}

TEST(TimeModel, AnIdleLinksBurstGoesAtOnceAndRefillsAtTheLinksRate) {
  LinkSide link{0, 1000};
  EXPECT_NEAR(link.send(0, 600, kRate, 1000), 0, 1e-15);            // from the bucket
  EXPECT_NEAR(link.send(0, 600, kRate, 1000), 200 / kRate, 1e-15);  // 400 left, 200 at the rate
  // Idle for 1 ms: 1000 bytes' worth, capped at the burst.
  EXPECT_NEAR(link.send(0.0012, 1500, kRate, 1000), 0.0012 + 500 / kRate, 1e-15);
}

TEST(TimeModel, PacedCrossoverSendsOnlyToMembersAlreadyInTheExchange) {
  const TrafficContext c = context(8, 4, 1000);
  const auto unpaced = traffic("crossover", c);
  const auto paced = traffic("crossover", c, {"--pace"});
  TimeModelOptions o = uniform(8);
  o.compute[3] = 3.0;  // member 3 enters its exchange 20 ms after the others
  TimeModel a(o), b(o);
  a.run_round(1, unpaced->round(1));
  b.run_round(1, paced->round(1));
  // Unpaced, what the others send member 3 has arrived when it is ready;
  // paced, they send only then, and it waits for their bytes.
  EXPECT_NEAR(a.clocks()[3], 3 * kStep, 1e-12);
  EXPECT_GT(b.clocks()[3], 3 * kStep + kLatency + message_s(1000));
  for (size_t k = 0; k < 8; ++k) EXPECT_GE(b.clocks()[k], a.clocks()[k] - 1e-12) << k;
}

TEST(TimeModel, OsgpWaitsForTheLastRoundsPushesNotThisOnes) {
  const TrafficContext c = context(4, 2, 1000);
  const auto t = traffic("osgp", c);
  TimeModel model(uniform(4));
  // Round 1 waits for nothing: its pushes are folded in round 2.
  EXPECT_NEAR(model.run_round(1, t->round(1)).slowest_s, kStep, 1e-12);
  // Round 2 starts at 2 steps; round 1's pushes arrived long before.
  EXPECT_NEAR(model.run_round(2, t->round(2)).slowest_s, 2 * kStep, 1e-12);
}

TEST(TimeModel, HierarchicalCrossoverAveragesInsideEachGroupAroundTheExchangeBetweenThem) {
  TrafficContext c = context(4, 4, 1000);
  for (size_t i = 0; i < 4; ++i) c.labels[i] = c.members[i] < "w2" ? "a" : "b";
  const auto stages = traffic("crossover", c, {"--hierarchical"})->round(1);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0].kind, TrafficStage::Kind::kAllreduce);
  EXPECT_EQ(stages[0].groups.size(), 2u);
  EXPECT_EQ(stages[1].kind, TrafficStage::Kind::kMessages);
  EXPECT_EQ(stages[1].messages.size(), 8u);  // each segment, from each group to the other
  for (const Transfer& m : stages[1].messages) EXPECT_NE(c.labels[m.from], c.labels[m.to]);
  EXPECT_EQ(stages[2].kind, TrafficStage::Kind::kAllreduce);
}

}  // namespace
}  // namespace gossipd::daemon
