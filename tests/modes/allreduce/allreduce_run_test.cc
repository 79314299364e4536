// AllReduce-SGD across real gossipd processes on loopback (ipc:// sockets in
// a private temp dir, HTTP on 127.0.0.1).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <set>

#include "tests/daemon/sync_run.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::vector<std::string> kSmallRun{"--train-limit", "3000", "--test-limit", "500",
                                         "--batch",       "32",   "--threads",    "1"};

void three_workers_stay_bit_identical(const std::vector<std::string>& extra) {
  Cluster c(3, with(with(kSmallRun, {"--epochs", "2", "--quiet", "--timeout-ms", "5000"}), extra));
  std::set<std::string> finals;
  for (int i = 0; i < c.size(); ++i) {
    ASSERT_TRUE(c.proc(i).wait(180s)) << "worker " << i << " did not finish";
    ASSERT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    const auto end = c.end_record(i);
    ASSERT_TRUE(end && end->event() == "done") << c.proc(i).out();
    EXPECT_EQ(end->round(), 2u * (3000 / 3 / 32));  // 31 steps per epoch, 2 epochs
    finals.insert(std::to_string(end->round()) + " " + end->param_hash());
  }
  EXPECT_EQ(finals.size(), 1u) << "replicas differ after training";
}

TEST(AllreduceSgd, ThreeWorkersStayBitIdentical) { three_workers_stay_bit_identical({}); }

// --compress: every member decodes the same bytes of each reduced block, so
// the replicas stay identical whatever the codec rounds.
TEST(AllreduceSgd, ThreeWorkersInFp16StayBitIdentical) {
  three_workers_stay_bit_identical({"--compress", "fp16"});
}

// Local SGD whose windows' changes are averaged in int8.
TEST(AllreduceSgd, LocalSgdInInt8StaysBitIdentical) {
  three_workers_stay_bit_identical({"--compress", "int8", "--compress-block", "64", "--local-steps", "4"});
}

TEST(AllreduceSgd, StatusAndMetricsWhileTraining) {
  Cluster c(2, with(kSmallRun, {"--epochs", "1000", "--quiet"}));
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0) << c.proc(0).out() << c.proc(0).err();
  proto::Status status;
  ASSERT_TRUE(wait_until(
      [&] {
        status = fetch_status(port);
        return status.state() == "training" && status.round() > 0 && status.epoch() >= 1;
      },
      60s))
      << status.DebugString();
  EXPECT_EQ(status.id(), "w0");
  EXPECT_EQ(status.algo(), "allreduce");
  EXPECT_EQ(std::vector<std::string>(status.members().begin(), status.members().end()),
            (std::vector<std::string>{"w0", "w1"}));
  // An epoch is done: its loss and evaluation are in.
  EXPECT_GT(status.loss(), 0.0);
  EXPECT_GT(status.test_accuracy(), 0.0);
  const MetricsText metrics = fetch_metrics(port);
  EXPECT_GE(metrics.value("gossipd_rounds_total").value_or(0), 1) << metrics;
  EXPECT_EQ(metrics.value("gossipd_members"), 2) << metrics;
  EXPECT_EQ(metrics.value("gossipd_messages_rejected_total", {{"reason", "cluster"}}), 0) << metrics;
}

// Three workers, the third SIGKILLed once all have stepped: the survivors
// re-form the ring and end with one replica after the planned steps. 20
// epochs (620 steps): the kill comes within the first few (AllReduce-SGD
// steps in lockstep, and the test looks at three statuses, then kills), and
// the survivors cannot step past it without re-forming the ring.
constexpr uint64_t kSurvivorEpochs = 20;

void survivors_reform_and_end_identical(const std::vector<std::string>& extra) {
  Cluster c(3, with(with(kSmallRun, {"--epochs", std::to_string(kSurvivorEpochs), "--quiet", "--timeout-ms",
                                     "1000", "--heartbeat-ms", "100", "--failure-timeout-ms", "1500"}),
                    extra));
  // Kill only once every member has finished a step: before that a member
  // may still be in the start-up barrier, which waits --startup-timeout-ms.
  for (int i = 0; i < c.size(); ++i) {
    const uint16_t port = c.http_port(i);
    ASSERT_GT(port, 0);
    ASSERT_TRUE(wait_until(
        [&] {
          const proto::Status s = fetch_status(port);
          return s.state() == "training" && s.round() > 0;
        },
        60s))
        << "worker " << i << " never completed a step";
  }
  c.proc(2).signal(SIGKILL);
  std::set<std::string> finals;
  for (int i : {0, 1}) {
    // A guard against a hang, not a bound on the run: 60 epochs of it took
    // ~30 s here, 80 s under the sanitizers alone and past 120 s with
    // another test beside it on 2 cores (140 s on a slow day).
    ASSERT_TRUE(c.proc(i).wait(400s)) << "survivor " << i << " hangs: " << c.proc(i).err();
    EXPECT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    const std::string log = c.proc(i).out() + c.proc(i).err();  // spdlog writes to stdout
    EXPECT_NE(log.find("ring re-formed over 2 members"), std::string::npos) << log;
    const auto end = c.end_record(i);
    ASSERT_TRUE(end && end->event() == "done") << c.proc(i).out();
    EXPECT_EQ(end->round(),
              kSurvivorEpochs * (3000 / 3 / 32));  // the planned number of steps, no more, no less
    finals.insert(std::to_string(end->round()) + " " + end->param_hash());
  }
  EXPECT_EQ(finals.size(), 1u) << "the survivors' replicas differ after re-forming";
}

TEST(AllreduceSgd, SurvivorsOfASigkilledRankReformTheRingAndEndIdentical) {
  survivors_reform_and_end_identical({});
}

// Local SGD (--local-steps 3): the death is met by a parameter average, which
// the survivors take again over the re-formed ring.
TEST(AllreduceSgd, LocalSgdSurvivorsOfASigkilledRankReformTheRingAndEndIdentical) {
  survivors_reform_and_end_identical({"--local-steps", "3"});
}

// A compressed step that fails is taken again with the residual it started
// with: the survivors still end identical.
TEST(AllreduceSgd, Fp16SurvivorsOfASigkilledRankReformTheRingAndEndIdentical) {
  survivors_reform_and_end_identical({"--compress", "fp16"});
}

TEST(AllreduceSgd, SigtermStopsCleanly) {
  Cluster c(1, with(kSmallRun, {"--epochs", "1000"}));
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0);
  ASSERT_TRUE(wait_until([&] { return fetch_status(port).state() == "training"; }, 60s));
  c.proc(0).signal(SIGTERM);
  ASSERT_TRUE(c.proc(0).wait(5s));
  EXPECT_EQ(c.proc(0).exit_code(), 0) << c.proc(0).err();
  EXPECT_NE(c.proc(0).out().find("stopped by signal"), std::string::npos);
}

TEST(AllreduceSgd, CurveClusterTrainsAndAStrangerKeyIsLockedOut) {
  TempDir dir("gossipd_keys");
  const std::string& keys = dir.path();
  fs::create_directories(keys + "/a");
  fs::create_directories(keys + "/b");
  for (const char* sub : {"/a", "/b"}) {
    RunResult r = run({bin("gossipctl"), "keygen", "--out", keys + sub}, 10s);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  EXPECT_EQ(fs::status(keys + "/a/cluster.secret").permissions() & fs::perms::group_read, fs::perms::none);
  RunResult again = run({bin("gossipctl"), "keygen", "--out", keys + "/a"}, 10s);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  {
    Cluster c(2,
              with(kSmallRun, {"--epochs", "1", "--quiet", "--curve-secret-key", keys + "/a/cluster.secret",
                               "--curve-cluster-key", keys + "/a/cluster.public"}));
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(c.proc(i).wait(120s));
      EXPECT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
      // Trained: the epoch's every step, over the encrypted connections.
      const auto end = c.end_record(i);
      ASSERT_TRUE(end && end->event() == "done") << c.proc(i).out();
      EXPECT_EQ(end->round(), 3000u / 2 / 32) << c.proc(i).out();
    }
  }
  // w1 holds another cluster's keys: w0 refuses it and reports at start-up.
  Cluster c(2, with(kSmallRun, {"--epochs", "1", "--quiet", "--startup-timeout-ms", "3000"}), [&](int i) {
    const std::string k = keys + (i == 0 ? "/a" : "/b");
    return std::vector<std::string>{"--curve-secret-key", k + "/cluster.secret", "--curve-cluster-key",
                                    k + "/cluster.public"};
  });
  ASSERT_TRUE(c.proc(0).wait(30s));
  EXPECT_EQ(c.proc(0).exit_code(), 1);
  EXPECT_NE(c.proc(0).err().find("'w1' silent"), std::string::npos) << c.proc(0).err();
}

TEST(AllreduceSgd, BadRunFlagsAreOneLine) {
  for (auto args : std::vector<std::vector<std::string>>{
           {"--peers", "w1"},
           {"--peers", "w1=tcp://127.0.0.1:1,w1=tcp://127.0.0.1:2"},
           {"--http", "nonsense"},
           {"--algo", "bogus"},
           {"--algo", "allreduce", "--compress", "zstd"},
           {"--algo", "allreduce", "--compress", "int8", "--compress-block", "8"},
           {"--listen", "carrier-pigeon://x"}}) {
    std::vector<std::string> argv{bin("gossipd"),  "run", "--id",         "w0",
                                  "--train-limit", "100", "--test-limit", "10"};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = run(argv, 30s);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace gossipd::testing
