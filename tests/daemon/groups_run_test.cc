// gossipd run --algo groups across real processes: each compute group ends
// with one model, the groups fold in each other's segments without waiting,
// one group is AllReduce-SGD, a dead member leaves its group to re-form while
// the other goes on, and bad counts are one line and exit 2.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/daemon/sync_run.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kGroupsData{"--train-limit", "3000", "--test-limit", "500",
                                           "--batch",       "32",   "--threads",    "1"};

// For the runs that are not about failures: a member stalled past the
// failure timeout is evicted and its group goes on as two (once in CI, under
// the sanitizers); ADeadMemberLeavesItsGroupToReform is the test of that.
const std::vector<std::string> kNoEviction{"--failure-timeout-ms", "600000"};

std::vector<std::string> groups(int g, const std::vector<std::string>& more) {
  return with(with(kGroupsData, {"--algo", "groups", "--compute-groups", std::to_string(g), "--quiet"}),
              more);
}

TEST(GroupsRun, EachGroupEndsWithOneModelAndBothLearn) {
  Cluster c(4, with(groups(2, {"--epochs", "2", "--timeout-ms", "10000"}), kNoEviction));
  const Done first = expect_identical_cells(c, 180s, {0, 1});
  const Done second = expect_identical_cells(c, 180s, {2, 3});
  EXPECT_EQ(first.rounds, 2 * (3000 / 4 / 32));  // data parallel: each worker its quarter
  EXPECT_EQ(second.rounds, first.rounds);
  EXPECT_NE(first.hash, second.hash) << "asynchronous groups ended with the same model";
  EXPECT_GT(first.accuracy, 0.6);
  EXPECT_GT(second.accuracy, 0.6);
}

TEST(GroupsRun, StatusShowsTheGroupTheStalenessOfWhatWasFoldedInAndTheAutoMomentum) {
  Cluster c(4, groups(2, {"--epochs", "1000", "--momentum", "auto", "--target-momentum", "0.8"}));
  for (int i : {0, 2}) {
    const uint16_t port = c.http_port(i);
    ASSERT_GT(port, 0) << c.proc(i).err();
    proto::Status s;
    ASSERT_TRUE(wait_until(
        [&] {
          s = fetch_status(port);
          return s.groups().segments_folded() > 0 && s.groups().exchange_rounds() > 0;
        },
        60s))
        << s.DebugString();
    EXPECT_EQ(s.algo(), "groups");
    EXPECT_EQ(s.groups().groups(), 2u);
    EXPECT_EQ(s.groups().group(), i == 0 ? 0u : 1u);
    const std::vector<std::string> ring(s.groups().group_members().begin(), s.groups().group_members().end());
    EXPECT_EQ(ring, i == 0 ? (std::vector<std::string>{"w0", "w1"}) : (std::vector<std::string>{"w2", "w3"}));
    EXPECT_GE(s.groups().staleness_max(), static_cast<int64_t>(s.groups().staleness_mean()));
    EXPECT_GT(s.bytes_sent(), 0u);
    // Two groups: the asynchrony's implicit momentum is 1 - 1/2, the explicit the rest of 0.8.
    EXPECT_TRUE(s.groups().momentum_auto());
    EXPECT_FLOAT_EQ(s.groups().implicit_momentum(), 0.5f);
    EXPECT_NEAR(s.groups().momentum(), 0.3f, 1e-6);
    const MetricsText m = fetch_metrics(port);
    EXPECT_GT(m.value("gossipd_groups_segments_folded_total").value_or(0), 0) << m;
  }
}

// With one group there is nothing to exchange: the run is AllReduce-SGD's.
TEST(GroupsRun, OneGroupIsAllreduceSgd) {
  Done groups_done, allreduce_done;
  {
    Cluster c(2, with(groups(1, {"--epochs", "1"}), kNoEviction));
    groups_done = expect_identical_cells(c, 120s);
  }
  {
    Cluster c(2, with(with(kGroupsData, {"--algo", "allreduce", "--epochs", "1", "--quiet"}), kNoEviction));
    allreduce_done = expect_identical_cells(c, 120s);
  }
  EXPECT_EQ(groups_done.hash, allreduce_done.hash);
  EXPECT_EQ(groups_done.rounds, 3000 / 2 / 32);
}

TEST(GroupsRun, ADeadMemberLeavesItsGroupToReformAndTheOtherGroupGoesOn) {
  Cluster c(4, groups(2, {"--epochs", "40", "--timeout-ms", "1000", "--heartbeat-ms", "100",
                          "--failure-timeout-ms", "1500"}));
  wait_for_rounds(c, 1);
  c.proc(3).signal(SIGKILL);
  expect_identical_cells(c, 120s, {0, 1});
  const Done alone = expect_identical_cells(c, 120s, {2});
  EXPECT_EQ(alone.rounds, 40 * (3000 / 4 / 32));
  const std::string log = c.proc(2).out() + c.proc(2).err();
  EXPECT_NE(log.find("ring re-formed over 1 members"), std::string::npos) << log;
  for (int i : {0, 1}) {
    const std::string other = c.proc(i).out() + c.proc(i).err();
    EXPECT_EQ(other.find("ring re-formed"), std::string::npos) << "group 0 re-formed: " << other;
  }
}

TEST(GroupsRun, BadCountsAndMomentaAreOneLine) {
  expect_refused_by(4, groups(3, {}), "--compute-groups 3: 3 compute groups do not divide 4 workers");
  expect_refused_by(4, with(kGroupsData, {"--algo", "groups"}), "--algo groups needs --compute-groups");
  expect_refused_by(4, with(kGroupsData, {"--compute-groups", "2"}), "--compute-groups is for --algo groups");
  expect_refused_by(4, with(kGroupsData, {"--momentum", "auto"}), "--momentum auto is for --algo groups");
  expect_refused_by(4, groups(2, {"--momentum", "1.5"}), "'1.5' is not in [0, 0.999] nor auto");
  expect_refused_by(4, groups(2, {"--momentum", "high"}), "'high' is not in [0, 0.999] nor auto");
  const RunResult train = run({bin("gossipd"), "train", "--momentum", "auto", "--epochs", "1"}, 30s);
  EXPECT_EQ(train.exit_code, 2) << train.err;
  EXPECT_NE(train.err.find("--momentum auto is for gossipd run --algo groups"), std::string::npos)
      << train.err;
}

}  // namespace
}  // namespace gossipd::testing
