// AllReduce-SGD, the grid's row and a compute group where hosts hold
// several members: 2 network-namespace hosts of 2 gossipd processes each.
// Every member agrees on the layout and sums in two levels (in each host,
// then across); the replicas end identical, and as accurate as the same
// run on one host (one flat ring: the same sums in another order).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <memory>
#include <set>

#include "daemon/ctl/compare_hosts.h"
#include "daemon/observe/metrics_log.h"
#include "tests/daemon/sync_run.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
constexpr int kLevelHosts = 2, kLevelPerHost = 2;

const std::vector<std::string> kLevelRun{
    "--algo",  "allreduce", "--epochs",  "1", "--train-limit", "4096", "--test-limit", "1000",
    "--batch", "32",        "--threads", "1", "--quiet"};

struct LevelEnd {
  std::string hash;
  double accuracy = -1;
};

// Waits for every process, which must end "done" with one model.
LevelEnd expect_identical(std::vector<std::unique_ptr<Process>>& procs,
                          const std::vector<std::string>& controls) {
  std::set<std::string> hashes;
  LevelEnd e;
  for (size_t i = 0; i < procs.size(); ++i) {
    if (!procs[i]->wait(180s)) {
      ADD_FAILURE() << "w" << i << " did not finish in 180 s; its threads:\n" << procs[i]->threads();
    }
    EXPECT_EQ(procs[i]->exit_code(), 0) << procs[i]->err();
    const auto records = daemon::read_control_records(controls[i]);
    if (records.empty() || records.back().event() != "done") {
      ADD_FAILURE() << "w" << i << " wrote no done record: " << procs[i]->err();
      continue;
    }
    hashes.insert(records.back().param_hash());
    e = {records.back().param_hash(), records.back().status().test_accuracy()};
  }
  EXPECT_EQ(hashes.size(), 1u) << "replicas differ after training";
  return e;
}

// The four members' peers list: "w0=E0,w1=E1,...".
std::string peers_of(const std::function<std::string(int)>& endpoint) {
  std::string peers;
  for (int i = 0; i < kLevelHosts * kLevelPerHost; ++i)
    peers.append(i ? ",w" : "w").append(std::to_string(i)).append("=").append(endpoint(i));
  return peers;
}

// Four members with `flags`, member i listening at endpoint(i), its command
// after prefix(i) (a netns exec, or nothing); their ends, each "done"
// with one model.
struct FourRun {
  std::vector<std::unique_ptr<Process>> procs;
  LevelEnd end;
};
FourRun run_four(const TempDir& dir, const std::string& tag, const std::function<std::string(int)>& endpoint,
                 const std::function<std::vector<std::string>(int)>& prefix,
                 const std::vector<std::string>& flags) {
  FourRun run;
  std::vector<std::string> controls;
  const std::string peers = peers_of(endpoint);
  for (int i = 0; i < kLevelHosts * kLevelPerHost; ++i) {
    controls.push_back(dir.file(tag + std::to_string(i) + ".control"));
    std::vector<std::string> argv = prefix(i);
    argv.insert(argv.end(), {bin("gossipd"), "run", "--id", "w" + std::to_string(i), "--listen", endpoint(i),
                             "--peers", peers, "--control-out", controls.back()});
    run.procs.push_back(std::make_unique<Process>(with(argv, flags)));
  }
  run.end = expect_identical(run.procs, controls);
  return run;
}

// Four members with `flags`: on two network-namespace hosts of two, then on
// one host; every member of the first says `said`, none of the second
// "two levels", both end with one model each, as accurate.
void two_hosts_against_one(const std::vector<std::string>& flags, const std::string& said) {
  TempDir dir("two_levels");
  daemon::NetnsHosts hosts(kLevelHosts, "");
  {  // the processes end (or are killed) before their namespaces go
    const auto host = [](int i) { return i / kLevelPerHost; };
    const FourRun levels = run_four(
        dir, "w",
        [&](int i) {
          return "tcp://" + hosts.address(host(i)) + ":" + std::to_string(7200 + i % kLevelPerHost);
        },
        [&](int i) {
          return std::vector<std::string>{hosts.ip(), "netns", "exec", hosts.netns(host(i))};
        },
        flags);
    for (size_t i = 0; i < levels.procs.size(); ++i)
      EXPECT_NE(levels.procs[i]->out().find(said), std::string::npos)
          << "w" << i << ": " << levels.procs[i]->out();
    // The same run with every member on one host: one flat ring.
    const FourRun ring = run_four(
        dir, "f", [&](int i) { return "ipc://" + dir.file("f" + std::to_string(i)); },
        [](int) { return std::vector<std::string>{}; }, flags);
    EXPECT_EQ(ring.procs[0]->out().find("two levels"), std::string::npos) << ring.procs[0]->out();
    EXPECT_LT(std::abs(levels.end.accuracy - ring.end.accuracy), 0.01)
        << "two levels " << levels.end.accuracy << ", one ring " << ring.end.accuracy;
    std::printf("[ measured ] test accuracy: two levels %.4f, one flat ring %.4f\n", levels.end.accuracy,
                ring.end.accuracy);
  }
}

// kLevelRun under another --algo, with `extra` flags.
std::vector<std::string> level_run(const std::string& algo, const std::vector<std::string>& extra) {
  std::vector<std::string> flags = kLevelRun;
  flags[1] = algo;
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

TEST(TwoLevels, FourMembersOnTwoHostsSumInTwoLevelsAndEndAsTheFlatRingDoes) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  two_hosts_against_one(kLevelRun, "allreduce in two levels, 2 hosts of 2 members");
}

// A 1x4 grid (a column a member, the row all four): the row's allreduce of
// the weight gradients takes two levels.
TEST(TwoLevels, AGridRowOnTwoHostsSumsInTwoLevelsAndEndsAsTheFlatRingDoes) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  two_hosts_against_one(level_run("grid", {"--grid", "1x4"}),
                        "the grid's row allreduce in two levels, 2 hosts of 2 members");
}

// One compute group of all four (g = 1): its ring's reduce-scatter and
// allgather (the sharded update) take two levels.
TEST(TwoLevels, AComputeGroupOnTwoHostsScattersAndGathersInTwoLevelsAndEndsAsOnOneHost) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  two_hosts_against_one(level_run("groups", {"--compute-groups", "1"}),
                        "allreduce in two levels, 2 hosts of 2 members");
}

// A pipeline of one stage and four replicas: the stage's replicas sum their
// gradients in two levels.
TEST(TwoLevels, APipelineStagesReplicasOnTwoHostsSumInTwoLevelsAndEndAsOnOneHost) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  two_hosts_against_one(level_run("pipeline", {"--stages", "1", "--replicas", "4"}),
                        "stage 0's replicas sum in two levels, 2 hosts of 2 members");
}

}  // namespace
}  // namespace gossipd::testing
