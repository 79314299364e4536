// gossipctl simulate's time model on a WAN (daemon/sim/time_model.h's
// WanModel): each case computed by hand from the paths' delays and rates.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "daemon/sim/time_model.h"
#include "protocol/collectives/collectives.h"

namespace gossipd::daemon::wan_model_test {
namespace {

constexpr double kStep = 0.010, kUncapped = 1e9;
constexpr double kInsideDelay = 0.002, kInsideRate = 100e6;  // 2 ms, 100 MB/s
constexpr double kBetweenDelay = 0.040, kBetweenRate = 1e6;  // 40 ms, 1 MB/s
constexpr uint64_t kBytes = 100000;

// Hosts w0, w1 in region 0 and w2, w3 in region 1, a member a host.
TimeModelOptions two_regions(double loss = 0, double w0_cap = kUncapped) {
  TimeModelOptions o;
  o.step_s = kStep;
  o.links.assign(4, LinkModel{0, kUncapped, 0});
  o.links[0].bytes_per_s = w0_cap;
  o.compute.assign(4, 1.0);
  o.deadline_s = 10;
  o.wan.region = {0, 0, 1, 1};
  o.wan.receive_bytes_per_s = kUncapped;
  const WanPath inside{kInsideDelay, 0, kInsideRate}, between{kBetweenDelay, loss, kBetweenRate};
  o.wan.paths = {{inside, between}, {between, inside}};
  return o;
}

TrafficStage sends(std::vector<Transfer> messages) {
  TrafficStage st;
  st.messages = std::move(messages);
  return st;
}

TEST(TimeModelWan, EachMessageTakesItsPathsRateThenItsDelay) {
  TimeModel model(two_regions());
  model.run_round(1, {sends({{0, 1, kBytes, 0}, {0, 2, kBytes, 1}})});
  const double uncapped = kBytes / kUncapped;  // the host's own link, which both pass first
  EXPECT_NEAR(model.clocks()[1], kStep + std::max(uncapped, kBytes / kInsideRate) + kInsideDelay, 1e-9);
  // Each path is a class of w0's link of its own: the second message waits
  // for the first on the host's link alone, not on the first's path.
  EXPECT_NEAR(model.clocks()[2], kStep + uncapped + kBytes / kBetweenRate + kBetweenDelay, 1e-9);
  EXPECT_NEAR(model.clocks()[0], kStep, 1e-12);
  EXPECT_NEAR(model.clocks()[3], kStep, 1e-12);
}

TEST(TimeModelWan, AHostsOwnCapHoldsEveryPathOfItsLink) {
  const double cap = 0.5e6;  // below both paths' rates
  TimeModel model(two_regions(0, cap));
  model.run_round(1, {sends({{0, 1, kBytes, 0}, {0, 2, kBytes, 1}})});
  EXPECT_NEAR(model.clocks()[1], kStep + kBytes / cap + kInsideDelay, 1e-9);
  EXPECT_NEAR(model.clocks()[2], kStep + 2 * kBytes / cap + kBetweenDelay, 1e-9);
}

TEST(TimeModelWan, AMessageThatLostAPacketIsResentAfterTwoDelaysMore) {
  TimeModel lossless(two_regions(0)), lossy(two_regions(0.999999));
  const std::vector<TrafficStage> round{sends({{0, 2, kBytes, 0}, {0, 1, kBytes, 1}})};
  lossless.run_round(1, round);
  lossy.run_round(1, round);
  EXPECT_NEAR(lossy.clocks()[2] - lossless.clocks()[2], 2 * kBetweenDelay, 1e-9);
  EXPECT_NEAR(lossy.clocks()[1], lossless.clocks()[1], 1e-12) << "the path inside its region loses nothing";
}

TEST(TimeModelWan, APacketLostNowAndThenDelaysThatShareOfTheMessages) {
  // A 100 KB message is 70 packets: 1 - (1 - 1e-4)^70, 0.7% of the
  // messages resent, each round's draw its own.
  const double loss = 1e-4;
  const int rounds = 4000;
  int resent = 0;
  for (int r = 1; r <= rounds; ++r) {
    TimeModel model(two_regions(loss));
    model.run_round(static_cast<uint64_t>(r), {sends({{0, 2, kBytes, 0}})});
    const double extra = model.clocks()[2] - (kStep + kBytes / kBetweenRate + kBetweenDelay);
    if (extra > kBetweenDelay) ++resent;
  }
  const double expected = rounds * (1 - std::pow(1 - loss, 70.0));
  EXPECT_NEAR(resent, expected, 4 * std::sqrt(expected));
  EXPECT_GT(resent, 0);
}

TEST(TimeModelWan, ARingAllReduceTakesItsSlowestPathsRateAndItsHopsMeanDelayAStep) {
  // The ring of 3 members, 2 (n - 1) steps of a third each: w0 -> w1 inside
  // a region, w1 -> w2 and w2 -> w0 between; the ring pipelines, a chunk
  // going round hop after hop, so a step takes the hops' mean delay.
  ASSERT_EQ(protocol::allreduce_schedule(30000, 3), protocol::AllreduceSchedule::kRing);
  TimeModelOptions o = two_regions();
  o.links.pop_back();
  o.compute.pop_back();
  o.wan.region.pop_back();
  TimeModel model(o);
  TrafficStage st;
  st.kind = TrafficStage::Kind::kAllreduce;
  st.groups = {{0, 1, 2}};
  st.allreduce_bytes = 120000;
  model.run_round(1, {st});
  const double mean_delay = (kInsideDelay + 2 * kBetweenDelay) / 3;
  for (double clock : model.clocks())
    EXPECT_NEAR(clock, kStep + 4 * (mean_delay + 40000.0 / kBetweenRate), 1e-9);
}

TEST(TimeModelWan, AButterflyAllReducePaysTheDelayBetweenRegionsOnlyInItsStepsThatCrossThem) {
  // 4 members, w0 w1 in region 0, w2 w3 in region 1: the butterfly halves
  // at distance 2 (between, half the buffer) and 1 (inside, a quarter),
  // then doubles at 1 and 2; its bytes, 3/2 of the buffer, at the slowest
  // path's rate.
  constexpr uint64_t kBuffer = 400000;
  ASSERT_EQ(protocol::allreduce_schedule(kBuffer / sizeof(float), 4),
            protocol::AllreduceSchedule::kButterfly);
  TimeModel model(two_regions());
  TrafficStage st;
  st.kind = TrafficStage::Kind::kAllreduce;
  st.groups = {{0, 1, 2, 3}};
  st.allreduce_bytes = kBuffer;
  model.run_round(1, {st});
  const double expected = kStep + 2 * kBetweenDelay + 2 * kInsideDelay + 1.5 * kBuffer / kBetweenRate;
  for (double clock : model.clocks()) EXPECT_NEAR(clock, expected, 1e-9);
}

TEST(TimeModelWan, AWanWithoutEveryHostsRegionOrAPathsRateIsRefused) {
  TimeModelOptions o = two_regions();
  o.wan.region.pop_back();
  EXPECT_THROW(TimeModel{o}, std::invalid_argument);
  o = two_regions();
  o.wan.paths[0][1].bytes_per_s = 0;
  EXPECT_THROW(TimeModel{o}, std::invalid_argument);
  o = two_regions(1.0);
  EXPECT_THROW(TimeModel{o}, std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::daemon::wan_model_test
