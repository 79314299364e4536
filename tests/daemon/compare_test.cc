// gossipctl compare end to end: 3 workers x 3 protocols on a data subset.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "daemon/config/cli.h"
#include "daemon/ctl/child_process.h"
#include "daemon/ctl/compare_args.h"
#include "daemon/ctl/compare_hosts.h"
#include "daemon/observe/metrics_log.h"
#include "tests/support/cluster.h"
#include "tests/support/process.h"
#include "tests/support/records.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// summary.json's result for `algo`; a failure when it has none.
const proto::CompareResult& result_of(const proto::CompareSummary& summary, const std::string& algo) {
  for (const auto& r : summary.results()) {
    if (r.algo() == algo) return r;
  }
  ADD_FAILURE() << "no result for " << algo << " in " << summary.DebugString();
  static const proto::CompareResult none;
  return none;
}

class CompareTest : public ::testing::Test {
 protected:
  // gossipctl compare --workers 4 with `args` exits 2 with `needle` in its
  // one line, before it makes --out.
  void expect_refused(const std::vector<std::string>& args, const std::string& needle) {
    std::vector<std::string> cmd = {bin("gossipctl"), "compare", "--workers", "4", "--out", dir_ + "/x"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    const auto r = run(cmd, 60s);
    EXPECT_EQ(r.exit_code, 2) << needle << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << needle << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir_ + "/x")) << "refused before anything ran";
  }

  TempDir tmp_{"gossipd_compare_test"};
  const std::string dir_ = tmp_.path();
};

TEST_F(CompareTest, ThreeProtocolsGiveASummaryPlotsAndAReport) {
  const std::string out = dir_ + "/report";
  const auto r = run(
      {bin("gossipctl"), "compare", "--workers", "3", "--algos", "crossover,sgp,allreduce", "--epochs", "2",
       "--batch", "32", "--train-limit", "3000", "--test-limit", "500", "--target", "0.5", "--out", out},
      300s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = read_json_file<proto::CompareSummary>(out + "/summary.json");
  ASSERT_EQ(summary.results_size(), 3) << summary.DebugString();
  for (const std::string algo : {"crossover", "sgp", "allreduce"}) {
    const proto::CompareResult& res = result_of(summary, algo);
    EXPECT_EQ(res.status(), "ok") << algo;
    EXPECT_EQ(res.workers(), 3u) << algo;
    EXPECT_EQ(res.epochs(), 2u) << algo;
    EXPECT_GT(res.final_mean_accuracy(), 0.5) << algo;
    EXPECT_GE(res.best_mean_accuracy(), res.final_mean_accuracy()) << algo;
    EXPECT_GT(res.averaged_model_accuracy(), 0.5) << algo;
    // The target (0.5) was reached, at a measured time.
    EXPECT_GT(res.seconds_to_target(), 0) << algo;
    EXPECT_GT(res.rounds_per_second(), 0) << algo;
    EXPECT_GE(res.final_consensus_distance(), 0) << algo;
    // Every protocol counts its bytes.
    EXPECT_GT(res.bytes_per_worker_per_round(), 0) << algo;
    // Every protocol waits on its exchange for part of each round, never longer than the round.
    EXPECT_GT(res.comm_ms_per_round(), 0.0) << algo;
    EXPECT_LT(res.comm_ms_per_round(), 1000.0 / res.rounds_per_second()) << algo;
    for (const std::string file : {"w0.jsonl", "w1.jsonl", "w2.jsonl", "curve.dat"}) {
      EXPECT_GT(fs::file_size(out + "/" + algo + "/" + file), 0u) << algo << "/" << file;
    }
  }
  // Crossover sends the model once a round; AllReduce's ring of 3 sends
  // 2 (n - 1) / n of the gradients (4/3), the payload without envelopes.
  const double model = result_of(summary, "crossover").bytes_per_worker_per_round();
  EXPECT_GT(result_of(summary, "allreduce").bytes_per_worker_per_round(), 1.25 * model);
  EXPECT_LT(result_of(summary, "allreduce").bytes_per_worker_per_round(), 1.45 * model);
  for (const std::string plot : {"accuracy_vs_time.svg", "accuracy_vs_epoch.svg", "consensus.svg",
                                 "bytes_per_round.svg", "round_time.svg"}) {
    ASSERT_TRUE(fs::exists(out + "/" + plot)) << plot;
    EXPECT_GT(fs::file_size(out + "/" + plot), 1000u) << plot;
    EXPECT_NE(daemon::read_file(out + "/" + plot).find("<svg"), std::string::npos) << plot;
  }
  const std::string md = daemon::read_file(out + "/report.md");
  const std::string html = daemon::read_file(out + "/report.html");
  for (const std::string algo : {"crossover", "sgp", "allreduce"}) {
    EXPECT_NE(md.find("| " + algo + " | ok |"), std::string::npos) << md;
    EXPECT_NE(html.find("<td> " + algo + " </td>"), std::string::npos) << algo;
  }
  EXPECT_NE(html.find("<svg"), std::string::npos) << "plots are embedded";
  EXPECT_EQ(md.find("paced"), std::string::npos) << "loopback does not pace by default: " << md;
  // Piped stdout: plain progress lines, no terminal control codes.
  EXPECT_EQ(r.out.find("\033["), std::string::npos);
  EXPECT_NE(r.out.find("report in " + out), std::string::npos) << r.out;
  // The last entry's members as Prometheus targets (deploy/prometheus/).
  const std::string targets = daemon::read_file(out + "/prometheus_targets.json");
  for (const std::string w : {"w0", "w1", "w2"})
    EXPECT_NE(targets.find("\"member\": \"" + w + "\""), std::string::npos) << targets;
  EXPECT_NE(targets.find("\"cluster\": \"compare-allreduce\""), std::string::npos) << targets;
  EXPECT_NE(targets.find("\"targets\": [\"127.0.0.1:"), std::string::npos) << targets;

  // A second run into the same directory would overwrite the first: refused.
  const auto again = run({bin("gossipctl"), "compare", "--workers", "2", "--out", out}, 30s);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("already holds a comparison"), std::string::npos) << again.err;
}

TEST_F(CompareTest, ReplicasThatAgreeExactlyStillGetAConsensusPlot) {
  // Two Crossover replicas are equal after every round: a consensus
  // distance of exactly 0 has no place on a log scale, and once made gnuplot
  // (and so the whole report) fail.
  const std::string out = dir_ + "/report";
  const auto r = run({bin("gossipctl"), "compare", "--workers", "2", "--algos", "crossover", "--epochs", "1",
                      "--batch", "32", "--train-limit", "2000", "--test-limit", "200", "--out", out},
                     120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(daemon::read_file(out + "/consensus.svg").find("no data"), std::string::npos);
  EXPECT_NE(daemon::read_file(out + "/report.md").find("| crossover | ok |"), std::string::npos);
}

TEST_F(CompareTest, AGridShapeAndComputeGroupsAreEntriesLikeTheProtocols) {
  const std::string out = dir_ + "/report";
  const auto r = run({bin("gossipctl"), "compare", "--workers", "4", "--algos", "allreduce,grid:2x2,groups:2",
                      "--epochs", "1", "--batch", "16", "--hidden", "64,32", "--train-limit", "2000",
                      "--test-limit", "200", "--out", out},
                     180s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string report = daemon::read_file(out + "/report.md");
  EXPECT_NE(report.find("| allreduce | ok |"), std::string::npos) << report;
  EXPECT_NE(report.find("| grid:2x2 | ok |"), std::string::npos) << report;
  EXPECT_NE(report.find("| groups:2 | ok |"), std::string::npos) << report;
  // Compute groups are data parallel: each worker its quarter, 16 a step.
  const auto groups = read_records(out + "/groups-2/w3.jsonl");
  ASSERT_FALSE(groups.empty());
  EXPECT_EQ(groups.back().round(), 2000u / 4 / 16);
  // One replica over 4 cells at 4 x 16 samples a step: the 2000 samples in 31 steps.
  const auto records = read_records(out + "/grid-2x2/w3.jsonl");
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back().round(), 2000u / 64);
  // --hidden reaches every worker: the parameters written are the 64,32 MLP's.
  const size_t params = 784 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10;
  EXPECT_EQ(std::filesystem::file_size(out + "/grid-2x2/w0.params"), params * sizeof(float));
  EXPECT_EQ(std::filesystem::file_size(out + "/allreduce/w0.params"), params * sizeof(float));
  // The plots draw the grid's curve from its directory.
  EXPECT_NE(daemon::read_file(out + "/plots.gp").find(out + "/grid-2x2/curve.dat"), std::string::npos);
}

// Two pipelines of two stages: each pipeline takes half the global batch
// (4 x 16), its two stages one process each.
TEST_F(CompareTest, APipelineIsAnEntryLikeTheProtocols) {
  const std::string out = dir_ + "/report";
  const auto r = run(
      {bin("gossipctl"), "compare", "--workers", "4", "--algos", "pipeline:2x2", "--epochs", "1", "--batch",
       "16", "--hidden", "64,32", "--train-limit", "2000", "--test-limit", "200", "--out", out},
      180s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string report = daemon::read_file(out + "/report.md");
  EXPECT_NE(report.find("| pipeline:2x2 | ok |"), std::string::npos) << report;
  // Each pipeline: its 1000 samples at 32 a step.
  const auto records = read_records(out + "/pipeline-2x2/w3.jsonl");
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back().round(), 1000u / 32);
  EXPECT_NE(daemon::read_file(out + "/plots.gp").find(out + "/pipeline-2x2/curve.dat"), std::string::npos);
}

TEST_F(CompareTest, AGridPipelineOrGroupsEntryThatDoesNotFitIsOneLine) {
  for (const auto& [algos, needle] : std::vector<std::pair<std::string, std::string>>{
           {"grid:3x2", "--algos grid:3x2 needs 6 processes, --workers is 4"},
           {"pipeline:3", "--algos pipeline:3 needs 3 processes, --workers is 4"},
           {"pipeline:x2", "give K stages or KxD"},
           {"pipeline:2y2", "give K stages or KxD"},
           {"grid", "needs its shape: grid:PRxPC"},
           {"grid:4", "is not PRxPC"},
           {"groups:3", "--algos groups:3: 3 groups do not divide --workers 4"},
           {"groups", "give the number of compute groups, groups:G"},
           {"groups:two", "give the number of compute groups, groups:G"},
           {"gird:2x2", "is not one of"}}) {
    const auto r =
        run({bin("gossipctl"), "compare", "--workers", "4", "--algos", algos, "--out", dir_ + "/x"}, 60s);
    EXPECT_EQ(r.exit_code, 2) << algos << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << algos << ": " << r.err;
  }
}

// The modes' own compare flags are checked as compare's were: a bad value
// by the flag, and --pace on that no entry can honour before any run.
TEST_F(CompareTest, AModesCompareFlagThatCannotHoldIsOneLine) {
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--algos", "crossover", "--groups", "2", "--pace", "on"},
            "--pace on is for flat crossover and sgp: drop --groups or --pace"},
           {{"--pace", "sometimes"}, "--pace: sometimes not in {auto,on,off}"},
           {{"--deadline", "sometimes"}, "--deadline: sometimes not in {fixed,adaptive}"},
           {{"--deadline-quantile", "0.005"}, "--deadline-quantile"},
           {{"--groups", "many"}, "--groups"},
           {{"--algos", "crossover", "--groups", "auto", "--pace", "on"},
            "--pace on is for flat crossover and sgp: drop --groups or --pace"},
           {{"--micro-batches", "-1"}, "--micro-batches"}})
    expect_refused(args, needle);
}

// --inject-step-delay-ms w1=100: worker w1 runs gossipd run
// --inject-step-delay-ms 100, so each of its 10 steps takes 100 ms longer
// (a lower bound no slow machine breaks), and the report says so.
TEST_F(CompareTest, AStepDelayNamedForOneWorkerSlowsThatWorkersSteps) {
  const std::string out = dir_ + "/slow";
  const auto r = run(
      {bin("gossipctl"), "compare", "--workers", "2", "--algos", "allreduce", "--epochs", "1", "--batch",
       "32", "--train-limit", "640", "--test-limit", "100", "--inject-step-delay-ms", "w1=100", "--out", out},
      120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto w1 = read_json_lines<proto::EpochRecord>(out + "/allreduce/w1.jsonl");
  ASSERT_FALSE(w1.empty());
  EXPECT_EQ(w1.back().round(), 10u);
  EXPECT_GE(w1.back().train_seconds(), 10 * 0.1) << "10 steps of w1, each 100 ms longer";
  EXPECT_NE(daemon::read_file(out + "/report.md").find("w1 +100 ms (--inject-step-delay-ms)"),
            std::string::npos);
}

// --emulate-step-ms 20,w1=100: every worker an emulated machine of 20 ms a
// step but w1, of 100 ms: w1's 10 steps take at least a second of training
// time whatever its real compute, and the report names the machines.
TEST_F(CompareTest, EmulatedMachinesPadEachWorkersStepsToTheirTime) {
  const std::string out = dir_ + "/emulated";
  const auto r = run(
      {bin("gossipctl"), "compare", "--workers", "2", "--algos", "allreduce", "--epochs", "1", "--batch",
       "32", "--train-limit", "640", "--test-limit", "100", "--emulate-step-ms", "20,w1=100", "--out", out},
      120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto w1 = read_json_lines<proto::EpochRecord>(out + "/allreduce/w1.jsonl");
  ASSERT_FALSE(w1.empty());
  EXPECT_EQ(w1.back().round(), 10u);
  EXPECT_GE(w1.back().train_seconds(), 10 * 0.1) << "10 steps of w1, each an emulated 100 ms";
  EXPECT_GE(w1.back().compute_ms_per_round(), 100) << "the emulated step is compute";
  EXPECT_NE(daemon::read_file(out + "/report.md").find("emulated machines: 20 ms a step, w1 100 ms"),
            std::string::npos);
}

TEST_F(CompareTest, AStepDelayForNoSuchWorkerOrOfNoDurationIsOneLine) {
  for (const auto& [value, needle] : std::vector<std::pair<std::string, std::string>>{
           {"w4=10", "there is no worker w4 among --workers 4"},
           {"w1=ten", "w1=ten is not a whole number of milliseconds"},
           {"w1=-5", "w1=-5 is not a whole number of milliseconds"},
           {"x1=5", "'x1=5' is not WORKER=VALUE"}})
    expect_refused({"--inject-step-delay-ms", value}, needle);
  for (const auto& [value, needle] :
       std::vector<std::pair<std::string, std::string>>{{"w4=2", "there is no worker w4 among --workers 4"},
                                                        {"w1=0.5", "w1=0.5 is not a factor from 1 to 100"},
                                                        {"w1=fast", "w1=fast is not a factor from 1 to 100"}})
    expect_refused({"--inject-step-slowdown", value}, needle);
  for (const auto& [value, needle] : std::vector<std::pair<std::string, std::string>>{
           {"w4=10", "there is no worker w4 among --workers 4"},
           {"fast", "--emulate-step-ms: 'fast' is not a whole number of milliseconds"},
           {"40,w1=-5", "--emulate-step-ms: w1=-5 is not a whole number of milliseconds"},
           {"40,80", "--emulate-step-ms: '80': give one number for every worker, then wK=MS"}})
    expect_refused({"--emulate-step-ms", value}, needle);
}

TEST_F(CompareTest, AByzantineWorkerOrDefenceThatCannotRunIsOneLine) {
  for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--inject-byzantine", "w4=scaled"}, "there is no worker w4 among --workers 4"},
           {{"--inject-byzantine", "w1=flip"}, "w1=flip: --inject-byzantine 'flip': 'flip' is not an attack"},
           {{"--algos", "grid:2x2", "--inject-byzantine", "w1=scaled"},
            "grid cannot send Byzantine values yet"},
           {{"--algos", "pipeline", "--robust", "clip"}, "--robust: pipeline takes only none"},
           {{"--algos", "pipeline", "--preset", "byzantine"}, "--robust: pipeline takes only none"},
           {{"--algos", "groups:2", "--inject-byzantine", "w1=dissensus"},
            "--inject-byzantine dissensus: a compute group's member receives no one's pushes"},
           {{"--algos", "groups:2", "--robust", "clip", "--evict-byzantine"},
            "--evict-byzantine: --algos groups:2: compute groups refuse a named pusher's pushes instead"},
           {{"--algos", "crossover", "--robust", "clip:-1"},
            "--robust 'clip:-1': '-1' is not a number above 0"},
           {{"--algos", "allreduce", "--inject-byzantine", "w1=alie"},
            "--inject-byzantine alie: allreduce's members receive no one's copy"},
           {{"--inject-byzantine", "w1=ipm:0"}, "'0' is not a number above 0"},
           {{"--evict-byzantine"}, "--evict-byzantine evicts the members --robust names"}})
    expect_refused(args, needle);
}

// --evict-byzantine: the attacker, evicted, ends with an error (refused,
// or stopped once the others are done); that is no failure of the run, and
// the report is the honest members'.
TEST_F(CompareTest, AnEvictedAttackerEndsWithoutFailingTheRunAndTheReportIsTheHonestMembers) {
  const std::string out = dir_ + "/report";
  const auto r =
      run({bin("gossipctl"), "compare", "--workers", "4",    "--algos",           "crossover,allreduce",
           "--epochs",       "3",       "--batch",   "32",   "--train-limit",     "6000",
           "--test-limit",   "1000",    "--robust",  "clip", "--evict-byzantine", "--inject-byzantine",
           "w3=scaled",      "--out",   out},
          300s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = read_json_file<proto::CompareSummary>(out + "/summary.json");
  for (const std::string algo : {"crossover", "allreduce"}) {
    const proto::CompareResult& res = result_of(summary, algo);
    EXPECT_EQ(res.status(), "ok") << algo;
    EXPECT_GT(res.final_mean_accuracy(), 0.6) << algo;
    const std::string log =
        daemon::read_file(out + "/" + algo + "/w0.log") + daemon::read_file(out + "/" + algo + "/w0.err");
    EXPECT_NE(log.find("member 'w3' evicted as Byzantine: named by "), std::string::npos)
        << algo << ": " << log;
  }
}

TEST_F(CompareTest, EvaluationsInsideEpochsRefineTheTimeToTarget) {
  const std::string out = dir_ + "/report";
  const auto r = run(
      {bin("gossipctl"),    "compare", "--workers", "2",  "--algos",       "allreduce", "--epochs",     "2",
       "--evals-per-epoch", "4",       "--batch",   "25", "--train-limit", "2000",      "--test-limit", "200",
       "--target",          "0.3",     "--out",     out},
      120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Every worker evaluates after a quarter, half, three quarters and all of
  // each epoch (40 steps of 25 of its 1000 samples).
  for (const std::string w : {"w0", "w1"}) {
    std::vector<double> progress;
    std::vector<uint32_t> epoch;
    for (const auto& rec : read_records(out + "/allreduce/" + w + ".jsonl")) {
      progress.push_back(rec.progress());
      epoch.push_back(rec.epoch());
    }
    EXPECT_EQ(progress, (std::vector<double>{0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2})) << w;
    EXPECT_EQ(epoch, (std::vector<uint32_t>{0, 0, 0, 1, 1, 1, 1, 2})) << w;
  }
  std::ifstream curve(out + "/allreduce/curve.dat");
  std::vector<double> rows;
  for (std::string line; std::getline(curve, line);) {
    if (!line.empty() && line[0] != '#') rows.push_back(std::stod(line));
  }
  EXPECT_EQ(rows, (std::vector<double>{0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2}));
  // The time to target is that of the first evaluation at or above it: a
  // quarter-epoch step, not the epoch's end.
  const auto summary = read_json_file<proto::CompareSummary>(out + "/summary.json");
  const proto::CompareResult& result = result_of(summary, "allreduce");
  const double to_target = result.epochs_to_target();
  EXPECT_GT(to_target, 0) << result.DebugString();
  EXPECT_EQ(to_target * 4, std::floor(to_target * 4)) << result.DebugString();
  // Training time to it leaves out the time training waited for evaluations
  // (run in the background, they may not have held it up at all).
  EXPECT_GT(result.train_seconds_to_target(), 0) << result.DebugString();
  EXPECT_LE(result.train_seconds_to_target(), result.seconds_to_target()) << result.DebugString();
  const std::string md = daemon::read_file(out + "/report.md");
  EXPECT_NE(md.find("evaluated 4 times per epoch"), std::string::npos) << md;
  EXPECT_NE(md.find("(training only)"), std::string::npos) << md;
}

TEST_F(CompareTest, AFailingProtocolIsReportedAndTheOthersStillRun) {
  // A gossipd whose worker w1 fails for crossover only (what a crash looks
  // like from compare), the real one otherwise. The other crossover workers
  // would wait for w1 until --startup-timeout-ms (60 s), then fail by
  // themselves: compare kills them first.
  const std::string wrapper = dir_ + "/gossipd";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\ncase \"$*\" in *\"--id w1 \"*\"--algo crossover\"*) echo 'simulated failure' >&2; exit "
         "3;; "
         "esac\nexec "
      << bin("gossipd") << " \"$@\"\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all);
  const std::string out = dir_ + "/report";
  const auto r = run(
      {bin("gossipctl"), "compare", "--workers", "3", "--algos", "crossover,allreduce", "--epochs", "1",
       "--batch", "32", "--train-limit", "2000", "--test-limit", "200", "--gossipd", wrapper, "--out", out},
      300s);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // The failed protocol's other workers were killed by compare, not left
  // to end by themselves: SIGKILLed, they wrote no end to their control
  // records (one that waited out --startup-timeout-ms records "failed").
  for (const std::string w : {"w0", "w2"}) {
    for (const proto::ControlRecord& rec :
         daemon::read_control_records(out + "/crossover/" + w + ".control")) {
      EXPECT_EQ(rec.event(), "listening") << w << " ended by itself: " << rec.DebugString();
    }
  }
  const auto summary = read_json_file<proto::CompareSummary>(out + "/summary.json");
  EXPECT_EQ(result_of(summary, "crossover").status().rfind("w1 exited with code 3: simulated failure", 0), 0u)
      << summary.DebugString();
  EXPECT_EQ(result_of(summary, "allreduce").status(), "ok") << summary.DebugString();
  const std::string md = daemon::read_file(out + "/report.md");
  EXPECT_NE(md.find("| crossover | w1 exited with code 3: simulated failure"), std::string::npos) << md;
  EXPECT_NE(md.find("| allreduce | ok |"), std::string::npos) << md;
}

// collect: the report from daemons that run on their own (here a local
// cluster), read through their /status.
TEST_F(CompareTest, CollectBuildsTheReportFromRunningDaemons) {
  Cluster c(3, {"--algo", "sgp", "--epochs", "4", "--quiet", "--threads", "1", "--train-limit", "9000",
                "--test-limit", "300", "--batch", "32", "--linger-ms", "2000"});
  const std::string hosts = dir_ + "/hosts";
  {
    std::ofstream h(hosts);
    h << "# the cluster's HTTP endpoints\n";
    for (int i = 0; i < 3; ++i) {
      const uint16_t port = c.http_port(i);
      ASSERT_GT(port, 0) << c.proc(i).err();
      h << "127.0.0.1:" << port << "\n";
    }
  }
  const std::string out = dir_ + "/collected";
  const auto r =
      run({bin("gossipctl"), "collect", "--hosts", hosts, "--out", out, "--poll-ms", "50", "--target", "0.5"},
          300s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = read_json_file<proto::CompareSummary>(out + "/summary.json");
  const proto::CompareResult& sgp = result_of(summary, "sgp");
  EXPECT_EQ(sgp.status(), "ok") << summary.DebugString();
  EXPECT_EQ(sgp.workers(), 3u) << summary.DebugString();
  EXPECT_GT(sgp.final_mean_accuracy(), 0.5) << summary.DebugString();
  for (int i = 0; i < 3; ++i) {
    EXPECT_GT(fs::file_size(out + "/sgp/w" + std::to_string(i) + ".jsonl"), 0u);
  }
  EXPECT_GT(fs::file_size(out + "/accuracy_vs_time.svg"), 1000u);
  EXPECT_NE(daemon::read_file(out + "/report.md").find("| sgp | ok |"), std::string::npos);
  // --linger-ms let it see every worker's last epoch (and "done").
  for (int i = 0; i < 3; ++i) {
    const auto records = read_records(out + "/sgp/w" + std::to_string(i) + ".jsonl");
    ASSERT_FALSE(records.empty()) << "worker " << i;
    EXPECT_EQ(records.back().epoch(), 4u) << "worker " << i;
  }

  std::ofstream(dir_ + "/bad") << "localhost:8080\nnot-a-host\n";
  const auto bad = run({bin("gossipctl"), "collect", "--hosts", dir_ + "/bad", "--out", dir_ + "/x"}, 30s);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("bad:2: 'not-a-host' is not HOST:PORT"), std::string::npos) << bad.err;
}

// One network namespace per worker, 100 mbit per host: each worker has its
// own address, the protocols train across the namespaces, and nothing is
// left behind. Needs root (CI runs as root).
TEST_F(CompareTest, NetnsHostsHaveTheirOwnAddressesAndAreRemoved) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  ASSERT_FALSE(daemon::find_program("ip").empty()) << "--netns needs iproute2";
  const NetworkState before = network_state();
  const std::string out = dir_ + "/report";
  const auto r = run({bin("gossipctl"),
                      "compare",
                      "--netns",
                      "--bandwidth",
                      "100mbit",
                      "--workers",
                      "3",
                      "--algos",
                      "crossover,allreduce",
                      "--epochs",
                      "1",
                      "--batch",
                      "32",
                      "--train-limit",
                      "3000",
                      "--test-limit",
                      "300",
                      "--target",
                      "0.5",
                      "--out",
                      out},
                     300s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::set<std::string> addresses;
  for (const std::string algo : {"crossover", "allreduce"}) {
    for (int i = 0; i < 3; ++i) {
      const auto records =
          daemon::read_control_records(out + "/" + algo + "/w" + std::to_string(i) + ".control");
      ASSERT_FALSE(records.empty()) << algo << " w" << i << " wrote no control record";
      const std::string& endpoint = records.front().endpoint();
      std::smatch m;
      ASSERT_TRUE(std::regex_match(endpoint, m, std::regex("tcp://(10\\.213\\.[0-9]+\\.[0-9]+):7100")))
          << endpoint;
      if (algo == "crossover") addresses.insert(m[1]);
    }
  }
  EXPECT_EQ(addresses.size(), 3u) << "every worker is a host with its own address";
  // Traffic flowed between the namespaces: both protocols trained and
  // crossover's workers sent and received whole rounds.
  const auto summary = read_json_file<proto::CompareSummary>(out + "/summary.json");
  EXPECT_EQ(result_of(summary, "crossover").status(), "ok") << summary.DebugString();
  EXPECT_EQ(result_of(summary, "allreduce").status(), "ok") << summary.DebugString();
  EXPECT_GT(result_of(summary, "crossover").bytes_per_worker_per_round(), 100000.0) << summary.DebugString();
  const std::string report = daemon::read_file(out + "/report.md");
  EXPECT_NE(report.find("100mbit per host"), std::string::npos) << report;
  EXPECT_NE(report.find("62 KiB send buffers"), std::string::npos) << report;  // ~5 ms of 100 mbit
  EXPECT_NE(report.find("paced (--pace)"), std::string::npos) << "capped links pace by default: " << report;
  EXPECT_TRUE(nothing_left_beyond(before, 120s)) << "a namespace or a link was left behind";
}

}  // namespace
}  // namespace gossipd::testing
