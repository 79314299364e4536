// gossipctl tune end to end: probes, the choice, its run and the report,
// on two workers and a data subset; and its one-line refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>

#include "daemon/ctl/child_process.h"
#include "daemon/modes/groups/tune_summary.pb.h"
#include "tests/support/process.h"
#include "tests/support/records.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class TuneTest : public ::testing::Test {
 protected:
  // gossipctl tune on `workers` workers and `train` training samples, then `more`.
  std::vector<std::string> tune_on(int workers, int train, const std::vector<std::string>& more) const {
    std::vector<std::string> a{bin("gossipctl"), "tune", "--workers",         std::to_string(workers),
                               "--batch",        "32",   "--train-limit",     std::to_string(train),
                               "--test-limit",   "500",  "--evals-per-epoch", "4"};
    a.insert(a.end(), more.begin(), more.end());
    return a;
  }
  std::vector<std::string> tune(const std::vector<std::string>& more) const { return tune_on(2, 2000, more); }
  TempDir tmp_{"gossipd_tune_test"};
  const std::string dir_ = tmp_.path();
};

// The budget is out of reach in these runs: the probes end because the grid
// is done (an event), whatever the machine's speed.
TEST_F(TuneTest, ProbesChooseTheLeastPredictedTimeAndRunItToTheGoal) {
  const std::string out = dir_ + "/t";
  const auto r =
      run(tune({"--groups", "1,2", "--lrs", "0.1,0.01", "--momenta", "0.9,0.3", "--target-accuracy", "0.65",
                "--epochs", "3", "--budget-s", "1000000", "--out", out}),
          600s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto s = read_json_file<proto::TuneSummary>(out + "/tune.json");
  EXPECT_EQ(s.stopped(), "grid done");
  // Cold start: g = 1 at both learning rates and the largest momentum; then
  // g = 2 at momenta up to g = 1's best (0.9: both), times {best lr, / 10}.
  ASSERT_EQ(s.probes_size(), 6) << s.DebugString();
  EXPECT_EQ(s.probes(0).name(), "g1 lr 0.1 m 0.9");
  EXPECT_EQ(s.probes(1).name(), "g1 lr 0.01 m 0.9");
  double best = 1e9;
  for (const auto& p : s.probes()) {
    EXPECT_EQ(p.status(), "ok") << p.name();
    EXPECT_GT(p.seconds_per_step(), 0) << p.name();
    if (p.predicted_seconds() >= 0) best = std::min(best, p.predicted_seconds());
    EXPECT_TRUE(fs::exists(out + "/" + p.dir() + "/goal.dat")) << p.name();
  }
  for (int i = 2; i < 6; ++i) EXPECT_EQ(s.probes(i).groups(), 2u);
  ASSERT_GE(s.chosen(), 0);
  EXPECT_DOUBLE_EQ(s.probes(s.chosen()).predicted_seconds(), best);
  // The chosen configuration ran to the goal, measured next to its prediction.
  EXPECT_EQ(s.outcome().name(), s.probes(s.chosen()).name());
  EXPECT_EQ(s.outcome().stopped(), "goal");
  EXPECT_GT(s.outcome().train_seconds_to_goal(), 0);
  for (const char* f : {"report.md", "report.html", "curves.svg"})
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  EXPECT_NE(daemon::read_file(out + "/report.md").find("the prediction was off by"), std::string::npos);
  // An --out that holds a tuning is never overwritten.
  const auto again = run(tune({"--groups", "1", "--target-accuracy", "0.5", "--out", out}), 60s);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already holds a tuning"), std::string::npos) << again.err;
}

// Two of four workers computing 3x slower (--inject-step-slowdown w0=3,w2=3:
// by rank each group of two would hold one): the first synchronous probe
// measures every member's compute, and the g = 2 runs take the members
// fastest first, the slow two in one group.
TEST_F(TuneTest, TheTunerGroupsMembersOfLikeSpeedFromTheFirstSynchronousProbe) {
  const std::string out = dir_ + "/speeds";
  const auto r = run(
      tune_on(4, 2000,
              {"--groups", "1,2", "--lrs", "0.1", "--momenta", "0.9", "--target-accuracy", "0.5", "--epochs",
               "1", "--budget-s", "1000000", "--inject-step-slowdown", "w0=3,w2=3", "--out", out}),
      600s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto s = read_json_file<proto::TuneSummary>(out + "/tune.json");
  ASSERT_EQ(s.compute_ms_size(), 4);
  for (int slow : {0, 2})
    for (int fast : {1, 3}) EXPECT_GT(s.compute_ms(slow), 1.25 * s.compute_ms(fast)) << slow << " " << fast;
  // Fast two first, slow two last (each pair in the order measured).
  EXPECT_TRUE(std::regex_match(s.group_order(), std::regex("(w1,w3|w3,w1),(w0,w2|w2,w0)")))
      << s.group_order();
  for (const auto& p : s.probes())
    EXPECT_EQ(p.group_order(), p.groups() > 1 ? s.group_order() : "") << p.name();
  EXPECT_TRUE(std::regex_search(daemon::read_file(out + "/report.md"),
                                std::regex(R"(at g = 2: \[(w1 w3|w3 w1)\] \[(w0 w2|w2 w0)\])")));
}

// The setting where asynchrony cannot win (the last measurement's, on 4
// hosts): workers of equal speed behind 100 mbit links, a step its bytes,
// every g sending about as much. The tuner keeps one group: the g = 2
// probes pay the staleness and cannot beat g = 1's prediction. Needs root.
TEST_F(TuneTest, AtEqualSpeedOnLinksThatBindTheStepTheTunerKeepsOneGroup) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const std::string out = dir_ + "/netns";
  const auto r = run(
      tune_on(4, 4000,
              {"--netns", "--bandwidth", "100mbit", "--groups", "1,2", "--lrs", "0.05", "--momenta", "0.9",
               "--target-accuracy", "0.7", "--epochs", "3", "--budget-s", "1000000", "--out", out}),
      600s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto s = read_json_file<proto::TuneSummary>(out + "/tune.json");
  EXPECT_EQ(s.stopped(), "grid done");
  ASSERT_GE(s.chosen(), 0) << s.DebugString();
  EXPECT_EQ(s.probes(s.chosen()).groups(), 1u) << s.DebugString();
  EXPECT_EQ(s.outcome().stopped(), "goal");
  bool probed_two = false;
  for (const auto& p : s.probes()) probed_two = probed_two || p.groups() == 2;
  EXPECT_TRUE(probed_two) << "the choice was made without a g = 2 probe";
}

TEST_F(TuneTest, AGoalNoProbeReachesWithinTheBudgetIsOneLineWithTheNearest) {
  // Every probe trains its one epoch and misses the goal.
  const std::string out = dir_ + "/t";
  auto r = run(tune({"--groups", "1", "--lrs", "0.05", "--momenta", "0.9", "--target-accuracy", "0.99",
                     "--epochs", "1", "--budget-s", "1000000", "--out", out}),
               300s);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("no probe reached test accuracy 0.99 (probing ended: grid done, 1 probe in "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the nearest was g1 lr 0.05 m 0.9 at 0."), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
  auto s = read_json_file<proto::TuneSummary>(out + "/tune.json");
  EXPECT_EQ(s.chosen(), -1);
  ASSERT_EQ(s.probes_size(), 1);
  EXPECT_EQ(s.probes(0).stopped(), "epochs");
  EXPECT_TRUE(fs::exists(out + "/report.md"));
  // A budget spent during the first probe ends it there, and the probing
  // (1000 epochs: no machine finishes them within the budget's second, as
  // the default 15 epochs of this subset were on an idle one).
  r = run(tune({"--groups", "1,2", "--lrs", "0.05", "--momenta", "0.9", "--target-accuracy", "0.99",
                "--epochs", "1000", "--budget-s", "1", "--out", dir_ + "/b"}),
          300s);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("no probe reached test accuracy 0.99 (probing ended: budget, 1 probe in "),
            std::string::npos)
      << r.err;
  s = read_json_file<proto::TuneSummary>(dir_ + "/b/tune.json");
  ASSERT_EQ(s.probes_size(), 1);
  EXPECT_EQ(s.probes(0).stopped(), "budget");
}

TEST_F(TuneTest, BadGridsAndGoalsAreOneLine) {
  for (const auto& [flags, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--groups", "3", "--target-loss", "0.5"}, "--groups 3: 3 groups do not divide --workers 2"},
           {{"--groups", "", "--target-loss", "0.5"}, "the tuner's grid is empty"},
           {{"--momenta", "", "--target-loss", "0.5"}, "the tuner's grid is empty"},
           {{"--target-loss", "0.5", "--target-accuracy", "0.8"}, "exactly one of --target-loss and"},
           {{}, "exactly one of --target-loss and"},
           {{"--target-accuracy", "1.5"}, "--target-accuracy"},
           {{"--lrs", "0.1,-1", "--target-loss", "0.5"}, "--lrs"}}) {
    std::vector<std::string> more = flags;
    more.insert(more.end(), {"--out", dir_ + "/x"});
    const auto r = run(tune(more), 60s);
    EXPECT_EQ(r.exit_code, 2) << needle << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << needle << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir_ + "/x/tune.json"));
}

}  // namespace
}  // namespace gossipd::testing
