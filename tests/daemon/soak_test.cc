// gossipctl soak: the churn it plans, what it measures of sweeps, and a
// short soak of real processes on loopback.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "daemon/config/wan_topology.h"
#include "daemon/ctl/soak_plan.h"
#include "daemon/ctl/soak_record.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
using daemon::ChurnEvent;

TEST(SoakPlan, EachEventKillsALiveMemberAndItsJoinerJoinsThroughAnother) {
  const std::vector<ChurnEvent> plan = daemon::plan_churn(5, 12, 7);
  ASSERT_EQ(plan.size(), 12u);
  std::set<int> live{0, 1, 2, 3, 4};
  for (size_t k = 0; k < plan.size(); ++k) {
    const ChurnEvent& e = plan[k];
    EXPECT_TRUE(live.count(e.victim)) << "event " << k << " kills w" << e.victim;
    EXPECT_EQ(e.joiner, 5 + static_cast<int>(k));
    EXPECT_NE(e.contact, e.victim);
    EXPECT_TRUE(live.count(e.contact)) << "event " << k;
    live.erase(e.victim);
    live.insert(e.joiner);
  }
  EXPECT_EQ(daemon::plan_churn(5, 12, 7).back().victim, plan.back().victim) << "drawn from the seed";
}

TEST(SoakPlan, TheWanHasAHostForEveryJoinerInItsVictimsRegion) {
  const std::vector<ChurnEvent> plan = daemon::plan_churn(32, 30, 1);
  const daemon::WanTopology t = daemon::parse_wan_topology(daemon::soak_wan_text(32, plan), "soak");
  ASSERT_EQ(t.hosts(), 62u);
  EXPECT_EQ(t.regions.size(), 4u);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(t.region_of[static_cast<size_t>(i)], static_cast<uint32_t>(i / 8));
  for (const ChurnEvent& e : plan)
    EXPECT_EQ(t.region_of[static_cast<size_t>(e.joiner)], t.region_of[static_cast<size_t>(e.victim)]);
  EXPECT_EQ(t.host_rate[7], "10mbit") << "the preset's slow hosts kept";
  EXPECT_EQ(t.link(0, 8).delay_ms, 30) << "eu-us as the preset has it";
}

TEST(SoakRecord, AChangeSettlesWhenEveryViewIsTheLiveMembers) {
  daemon::SoakRecord r(6);
  for (const std::string id : {"w0", "w1", "w2"}) r.started(id);
  r.killed("w2", 10);
  r.started("w3");
  const auto sweep = [&](double t, const std::vector<std::string>& view) {
    r.start_sweep(t);
    for (const std::string id : {"w0", "w1", "w3"}) r.saw(id, static_cast<uint64_t>(t), "training", view);
    r.end_sweep();
  };
  sweep(11, {"w0", "w1", "w2"});
  sweep(14, {"w0", "w1"});
  EXPECT_FALSE(r.changes().at(0).converged);
  EXPECT_TRUE(r.saw_everyone_training());
  sweep(15.5, {"w0", "w1", "w3"});
  ASSERT_TRUE(r.changes().at(0).converged);
  EXPECT_DOUBLE_EQ(*r.changes().at(0).converged, 5.5);
  EXPECT_TRUE(r.falsely_evicted().empty()) << "w3 was missing only while it joined";
  EXPECT_FALSE(r.split_at_end());
  EXPECT_DOUBLE_EQ(r.gaps().at("w0"), 3) << "rounds ended at 11, 14 and 15.5";
}

TEST(SoakRecord, ALiveMemberMissingFromAViewPastTheBoundIsFalselyEvictedAndTheSplitSeen) {
  daemon::SoakRecord r(6);
  for (const std::string id : {"w0", "w1", "w2"}) r.started(id);
  r.start_sweep(5);
  for (const std::string id : {"w0", "w1", "w2"}) r.saw(id, 1, "training", {"w0", "w1", "w2"});
  r.end_sweep();
  for (double t : {10.0, 13.0, 17.0}) {
    r.start_sweep(t);
    r.saw("w0", 1, "training", {"w0", "w1"});
    r.saw("w1", 1, "training", {"w0", "w1", "w2"});
    r.saw("w2", 1, "training", {"w0", "w1", "w2"});
    r.end_sweep();
  }
  EXPECT_EQ(r.falsely_evicted(), std::set<std::string>{"w2"});
  EXPECT_TRUE(r.split_at_end());
}

TEST(SoakRecord, AMemberDoneWithItsRunLeavesTheViewsWithoutAnEvictionOrAChange) {
  daemon::SoakRecord r(6);
  for (const std::string id : {"w0", "w1"}) r.started(id);
  r.start_sweep(5);
  for (const std::string id : {"w0", "w1"}) r.saw(id, 1, "training", {"w0", "w1"});
  r.end_sweep();
  r.left("w1");
  for (double t : {10.0, 20.0}) {
    r.start_sweep(t);
    r.saw("w0", 2, "training", {"w0"});
    r.end_sweep();
  }
  EXPECT_TRUE(r.falsely_evicted().empty());
  EXPECT_TRUE(r.changes().empty());
  EXPECT_DOUBLE_EQ(r.last_full_sweep(), 20);
}

// Five workers on loopback, a kill and a join every 12 s, twice: every
// joiner joins (the state download) and ends with the others, every
// change settles (each live member's view the live members), nobody alive
// is evicted, one view at the end. (Every 6 s a joiner failed now and
// then: its download asks the member just killed for a share, waits the
// 10 s stall, and its contact was the next one killed.) Each step takes 30
// ms more, so that the run lasts about 45 s on an idle machine too.
TEST(Soak, KilledMembersAreReplacedByJoinersAndEveryViewSettles) {
  TempDir tmp("gossipd_soak_test");
  const std::vector<std::string> argv{bin("gossipctl"),
                                      "soak",
                                      "--workers",
                                      "5",
                                      "--algos",
                                      "crossover",
                                      "--epochs",
                                      "22",
                                      "--train-limit",
                                      "6000",
                                      "--test-limit",
                                      "500",
                                      "--batch",
                                      "32",
                                      "--churn-every-s",
                                      "12",
                                      "--churn-events",
                                      "2",
                                      "--inject-step-delay-ms",
                                      "w0=30,w1=30,w2=30,w3=30,w4=30",
                                      "--out",
                                      tmp.path() + "/s"};
  const auto r = run(argv, 300s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::ifstream in(tmp.path() + "/s/soak.json");
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  for (const std::string expected : {"\"changes\":2,", "\"survivors_done\":5,", "\"failed\":\"\"",
                                     "\"false_evictions\":0,", "\"split_view_at_end\":false"})
    EXPECT_NE(json.find(expected), std::string::npos) << expected << " in " << json << "\n" << r.out;
  EXPECT_EQ(r.out.find("settle after a change -1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" never"), r.out.find(" never killed")) << "a change that never settled: " << r.out;
  for (const std::string joiner : {"w5", "w6"}) {
    std::ifstream control(tmp.path() + "/s/crossover/" + joiner + ".control");
    std::stringstream records;
    records << control.rdbuf();
    EXPECT_NE(records.str().find("\"done\""), std::string::npos) << joiner << " ended with the others";
  }
  const std::string report = r.out;
  EXPECT_NE(report.find("not settled within"), std::string::npos) << report;
}

}  // namespace
}  // namespace gossipd::testing
