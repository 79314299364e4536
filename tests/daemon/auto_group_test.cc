// --group auto's parts (daemon/cluster/auto_group.h): the round trips a
// member measures and the label it takes from them.
#include "daemon/cluster/auto_group.h"

#include <gtest/gtest.h>

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using daemon::choose_group;
using daemon::RoundTrips;

// Answers `r`'s PING to `peer` after each of `trips`, one PING at a time;
// returns the padding each PING carried.
std::vector<size_t> answer(RoundTrips& r, const std::string& peer, RoundTrips::Clock::time_point& t,
                           std::vector<std::chrono::milliseconds> trips) {
  std::vector<size_t> padding;
  for (auto trip : trips) {
    const auto ping = r.due({peer}, t);
    if (ping.size() != 1u) {
      ADD_FAILURE() << "no PING due to " << peer;
      return padding;
    }
    padding.push_back(ping[0].padding);
    t += trip;
    EXPECT_TRUE(r.acked(ping[0].seq, peer, t));
  }
  return padding;
}

TEST(RoundTrips, APeersRoundTripIsTheLeastOfItsAnswersOnePingOutAtATime) {
  RoundTrips r(1s, 20ms);
  const auto start = RoundTrips::Clock::now();
  auto first = r.due({"a", "b"}, start);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_NE(first[0].seq & RoundTrips::kSeqBit, 0u) << "the Prober's sequence numbers never reach this bit";
  EXPECT_TRUE(r.due({"a", "b"}, start + 1ms).empty()) << "one PING out per peer";
  EXPECT_FALSE(r.acked(7, "a", start)) << "a probe's ACK is the Prober's";
  EXPECT_TRUE(r.acked(first[0].seq, "b", start + 2ms)) << "ours, but from the wrong peer: ignored";
  EXPECT_TRUE(r.least().empty());
  auto t = start + 60ms;
  EXPECT_TRUE(r.acked(first[0].seq, "a", t));
  EXPECT_EQ(answer(r, "a", t, {70ms, 65ms}), (std::vector<size_t>{0, 0})) << "a delay: bare PINGs";
  EXPECT_EQ(r.least().at("a"), 60ms);
  EXPECT_TRUE(r.settled({"a"})) << "far by its delay: its rate is not measured";
  EXPECT_TRUE(r.due({"a"}, t).empty()) << "measured: no more PINGs";
  EXPECT_FALSE(r.settled({"a", "b"}));
}

// A peer near by its delay is measured again with padded PINGs, and their
// round trip is its: a host 2 ms away behind a slow link is not near.
TEST(RoundTrips, APeerNearByItsDelayIsTimedWithPaddingAndThatIsItsRoundTrip) {
  RoundTrips r(1s, 20ms);
  auto t = RoundTrips::Clock::now();
  EXPECT_EQ(answer(r, "slow", t, {5ms, 4ms, 6ms}), (std::vector<size_t>{0, 0, 0}));
  EXPECT_FALSE(r.settled({"slow"})) << "near by its delay: its rate is still to measure";
  const std::vector<size_t> padded(RoundTrips::kSamples, RoundTrips::kPaddingBytes);
  EXPECT_EQ(answer(r, "slow", t, {31ms, 30ms, 33ms}), padded);
  EXPECT_TRUE(r.settled({"slow"}));
  EXPECT_EQ(r.least().at("slow"), 30ms);
  EXPECT_EQ(answer(r, "fast", t, {5ms, 4ms, 6ms, 6ms, 5ms, 7ms}),
            (std::vector<size_t>{0, 0, 0, RoundTrips::kPaddingBytes, RoundTrips::kPaddingBytes,
                                 RoundTrips::kPaddingBytes}));
  EXPECT_EQ(r.least().at("fast"), 5ms);
}

TEST(RoundTrips, APeerThatDoesNotAnswerIsGivenUpOnAndItsLateAckIgnored) {
  RoundTrips r(1s, 20ms);
  auto t = RoundTrips::Clock::now();
  const uint64_t first = r.due({"b"}, t).at(0).seq;
  for (size_t i = 1; i < RoundTrips::kTries; ++i) {
    t += 1s;
    EXPECT_EQ(r.due({"b"}, t).size(), 1u) << "try " << i + 1 << ": the last one given up on";
  }
  EXPECT_FALSE(r.settled({"b"}));
  t += 1s;
  EXPECT_TRUE(r.due({"b"}, t).empty());
  EXPECT_TRUE(r.settled({"b"})) << RoundTrips::kTries << " PINGs unanswered";
  EXPECT_TRUE(r.acked(first, "b", t));
  EXPECT_TRUE(r.least().empty()) << "a PING given up on times a queue, not the link";
}

// Near by its delay, but no padded PING answered in time: not near.
TEST(RoundTrips, APeerThatAnswersNoPaddedPingHasNoRoundTrip) {
  RoundTrips r(1s, 20ms);
  auto t = RoundTrips::Clock::now();
  answer(r, "c", t, {4ms, 4ms, 4ms});
  for (size_t i = 0; i < RoundTrips::kTries; ++i) {
    EXPECT_EQ(r.due({"c"}, t).at(0).padding, RoundTrips::kPaddingBytes);
    t += 1s;
  }
  EXPECT_TRUE(r.due({"c"}, t).empty());
  EXPECT_TRUE(r.settled({"c"}));
  EXPECT_TRUE(r.least().empty());
}

TEST(ChooseGroup, MembersOfOneRegionNameItAfterItsLowestIdWhateverOrderTheyDecideIn) {
  // Region {w4, w5, w6} 4 ms apart, w0 60 ms away; nobody labelled yet.
  const auto g = choose_group("w6", {{"w4", 5ms}, {"w5", 4ms}, {"w0", 61ms}}, {}, 20ms);
  EXPECT_EQ(g.label, "auto-w4");
  EXPECT_EQ(g.near, (std::vector<std::string>{"w5", "w4"})) << "nearest first";
  EXPECT_EQ(choose_group("w4", {{"w5", 4ms}, {"w6", 5ms}, {"w0", 61ms}}, {}, 20ms).label, "auto-w4");
  EXPECT_EQ(choose_group("w4", {{"w5", 20ms}}, {}, 20ms).near.size(), 1u) << "the bound is inclusive";
}

TEST(ChooseGroup, AJoinerTakesItsNearestLabelledPeersGroupAndAFarOneFoundsItsOwn) {
  const std::map<std::string, std::string> labels{{"w0", "auto-w0"}, {"w4", "auto-w4"}, {"w5", ""}};
  // w5 not labelled yet; w4's label is taken although w1 (lower) is near too.
  EXPECT_EQ(choose_group("w9", {{"w5", 3ms}, {"w4", 6ms}, {"w1", 7ms}, {"w0", 70ms}}, labels, 20ms).label,
            "auto-w4");
  // A region that measured one link slow is pulled in by a labelled peer.
  EXPECT_EQ(choose_group("w2", {{"w4", 8ms}}, labels, 20ms).label, "auto-w4");
  const auto alone = choose_group("w9", {{"w0", 70ms}, {"w4", 65ms}}, labels, 20ms);
  EXPECT_EQ(alone.label, "auto-w9");
  EXPECT_TRUE(alone.near.empty());
}

}  // namespace
}  // namespace gossipd::testing
