// gossipctl simulate: the workers as members of gossipd run in one process,
// held to compare's real processes bit for bit, and its bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/records.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

// The end record of every worker of one entry (OUT/DIR/w<i>.control).
std::vector<proto::ControlRecord> end_records(const std::string& out, const std::string& dir, int workers) {
  std::vector<proto::ControlRecord> ends;
  for (int i = 0; i < workers; ++i) {
    for (const auto& r :
         read_json_lines<proto::ControlRecord>(out + "/" + dir + "/w" + std::to_string(i) + ".control")) {
      if (r.event() == "done") ends.push_back(r);
    }
  }
  return ends;
}

// compare and simulate with the same flags; every worker of every entry
// ends with the same parameters in both (compare's run skipped no segment:
// a skip changes what is averaged, so the hashes are only compared then).
// `compare_only` and `simulate_only` are each one's own flags beside them.
void expect_held_to_compare(const std::string& root, const std::vector<std::string>& flags,
                            const std::vector<std::string>& dirs, int workers,
                            const std::vector<std::string>& compare_only = {},
                            const std::vector<std::string>& simulate_only = {}) {
  std::vector<std::string> compare{bin("gossipctl"), "compare", "--out", root + "/compare"};
  std::vector<std::string> simulate{bin("gossipctl"), "simulate", "--out", root + "/simulate"};
  compare.insert(compare.end(), flags.begin(), flags.end());
  simulate.insert(simulate.end(), flags.begin(), flags.end());
  compare.insert(compare.end(), compare_only.begin(), compare_only.end());
  simulate.insert(simulate.end(), simulate_only.begin(), simulate_only.end());
  const auto c = run(compare, 300s);
  ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
  const auto s = run(simulate, 300s);
  ASSERT_EQ(s.exit_code, 0) << s.out << s.err;
  const auto summary = read_json_file<proto::CompareSummary>(root + "/simulate/summary.json");
  EXPECT_TRUE(summary.simulated());
  EXPECT_FALSE(summary.time_model().empty());
  ASSERT_EQ(summary.results_size(), static_cast<int>(dirs.size()));
  for (const auto& r : summary.results()) EXPECT_EQ(r.status(), "ok") << r.algo();
  for (const auto& dir : dirs) {
    const auto real = end_records(root + "/compare", dir, workers);
    const auto virt = end_records(root + "/simulate", dir, workers);
    ASSERT_EQ(real.size(), static_cast<size_t>(workers)) << dir;
    ASSERT_EQ(virt.size(), static_cast<size_t>(workers)) << dir;
    for (int i = 0; i < workers; ++i) {
      ASSERT_EQ(real[i].status().segments_skipped(), 0u)
          << dir << " w" << i << ": compare's run skipped a segment";
      EXPECT_EQ(virt[i].status().segments_skipped(), 0u) << dir << " w" << i;
      EXPECT_EQ(virt[i].param_hash(), real[i].param_hash()) << dir << " w" << i;
      EXPECT_EQ(virt[i].round(), real[i].round()) << dir << " w" << i;
    }
  }
}

// Each case's flags (on simulate at 4 workers) refused with exit 2 in one
// line that says `says`, before anything is written (--out not made).
void expect_refused(const std::vector<std::pair<std::vector<std::string>, std::string>>& cases) {
  TempDir tmp("gossipd_simulate_test");
  for (const auto& [extra, says] : cases) {
    std::vector<std::string> a{bin("gossipctl"), "simulate", "--out", tmp.path() + "/x", "--workers", "4"};
    a.insert(a.end(), extra.begin(), extra.end());
    const auto r = run(a, 30s);
    EXPECT_EQ(r.exit_code, 2) << extra.back() << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << extra.back() << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/x")) << extra.back();
  }
}

const std::vector<std::string> kSimulatedRun{"--workers",    "4",   "--epochs",      "1",
                                             "--batch",      "32",  "--train-limit", "2000",
                                             "--test-limit", "200", "--target",      "0.5"};

TEST(Simulate, CrossoverSgpOsgpAndAllReduceEndBitForBitAsCompareRunsThemAtFourWorkers) {
  TempDir tmp("gossipd_simulate_test");
  std::vector<std::string> flags = kSimulatedRun;
  flags.insert(flags.end(), {"--algos", "crossover,sgp,osgp,allreduce"});
  expect_held_to_compare(tmp.path(), flags, {"crossover", "sgp", "osgp", "allreduce"}, 4);
}

TEST(Simulate, HierarchicalCrossoverEndsBitForBitAsCompareRunsItAtFourWorkers) {
  TempDir tmp("gossipd_simulate_test");
  std::vector<std::string> flags = kSimulatedRun;
  flags.insert(flags.end(), {"--algos", "crossover", "--groups", "2"});
  expect_held_to_compare(tmp.path(), flags, {"crossover"}, 4);
}

// --compress and --local-steps: each protocol its own codec and H, the
// daemon's and the simulator's rounding and rounds the same, bit for bit;
// AllReduce-SGD's local SGD (H = 4 of 15 steps: the last averages too) in
// fp16, with an outer momentum as crossover's, ends with one replica.
TEST(Simulate, CompressedGossipLocalStepsAndOuterMomentumEndBitForBitAsCompareRunsThem) {
  TempDir tmp("gossipd_simulate_test");
  std::vector<std::string> flags = kSimulatedRun;
  flags.insert(flags.end(), {"--algos", "crossover,sgp,osgp,allreduce", "--compress",
                             "int8/64,sgp=fp16,osgp=bf16,allreduce=fp16", "--local-steps", "4,sgp=1",
                             "--outer-momentum", "0.5,sgp=0,osgp=0"});
  expect_held_to_compare(tmp.path(), flags, {"crossover", "sgp", "osgp", "allreduce"}, 4);
  const auto ends = end_records(tmp.path() + "/compare", "allreduce", 4);
  ASSERT_EQ(ends.size(), 4u);
  EXPECT_EQ(ends[0].round(), 15u) << "the run's steps, as this test counts them";
  for (const auto& e : ends) EXPECT_EQ(e.param_hash(), ends[0].param_hash()) << "replicas after local SGD";
}

// The bytes counted per round and worker, float32 against each codec: at
// most 0.52x with fp16 and bf16, 0.27x with int8 (its scales and the
// envelopes included), a quarter with --local-steps 4, for every protocol.
TEST(Simulate, EachCodecCutsEveryProtocolsBytesPerRound) {
  TempDir tmp("gossipd_simulate_test");
  std::map<std::string, std::map<std::string, double>> bytes;  // codec -> algo -> bytes
  std::map<std::string, uint64_t> rounds;
  for (const std::string codec : {"none", "fp16", "bf16", "int8", "h4"}) {
    std::vector<std::string> a{bin("gossipctl"),         "simulate", "--out",
                               tmp.path() + "/" + codec, "--algos",  "crossover,sgp,osgp,allreduce"};
    if (codec == "h4") {
      a.insert(a.end(), {"--local-steps", "4"});  // float32, an exchange every 4th step
    } else {
      a.insert(a.end(), {"--compress", codec});
    }
    a.insert(a.end(), kSimulatedRun.begin(), kSimulatedRun.end());
    const auto r = run(a, 300s);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto summary = read_json_file<proto::CompareSummary>(tmp.path() + "/" + codec + "/summary.json");
    for (const auto& res : summary.results()) {
      bytes[codec][res.algo()] = res.bytes_per_worker_per_round();
      rounds[res.algo()] = res.rounds();
    }
  }
  for (const std::string algo : {"crossover", "sgp", "osgp", "allreduce"}) {
    const double f32 = bytes["none"][algo];
    ASSERT_GT(f32, 4 * 200000.0) << algo << ": the MLP's float32 bytes";
    EXPECT_LE(bytes["fp16"][algo], 0.52 * f32) << algo;
    EXPECT_LE(bytes["bf16"][algo], 0.52 * f32) << algo;
    EXPECT_LE(bytes["int8"][algo], 0.27 * f32) << algo;
    EXPECT_GT(bytes["int8"][algo], 0.25 * f32) << algo << ": a byte a value and the scales";
    // Exchanges on the steps that are multiples of 4, of `rounds` steps;
    // AllReduce-SGD's local SGD averages at the last step too.
    const uint64_t last = algo == "allreduce" && rounds[algo] % 4 != 0 ? 1 : 0;
    const double exchanged = static_cast<double>(rounds[algo] / 4 + last) / static_cast<double>(rounds[algo]);
    EXPECT_NEAR(bytes["h4"][algo], exchanged * f32, 0.01 * f32) << algo << ": --local-steps 4";
  }
}

TEST(Simulate, BadCompressAndLocalStepsFlagsAreRefusedInOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--compress", "zip"}, "'zip' is not a codec"},
      {{"--compress", "int8/7"}, "does not fit"},
      {{"--compress", "fp16/16"}, "only int8 has a block"},
      {{"--compress", "fp16,crosover=int8"}, "'crosover' is not a protocol"},
      {{"--compress", "fp16,sgp=int8,sgp=none"}, "sgp is named twice"},
      {{"--compress", "fp16", "--algos", "crossover,pipeline"}, "pipeline takes only none"},
      {{"--local-steps", "0"}, "1 or more"},
      {{"--local-steps", "4", "--algos", "crossover,groups:2"}, "groups takes only 1"},
      {{"--local-steps", "4", "--outer-momentum", "1.5"}, "a momentum in [0, 1)"},
      {{"--local-steps", "4", "--outer-momentum", "0.5", "--algos", "crossover,sgp"}, "sgp takes only 0"},
  };
  expect_refused(cases);
}

TEST(Simulate, FlagsOfRealProcessesAreRefusedInOneLine) {
  TempDir tmp("gossipd_simulate_test");
  for (const std::vector<std::string>& extra :
       std::vector<std::vector<std::string>>{{"--netns"},
                                             {"--delay-ms", "5"},
                                             {"--gossipd", "/bin/true"},
                                             {"--evict-byzantine", "--robust", "clip"}}) {
    std::vector<std::string> a{bin("gossipctl"), "simulate", "--out", tmp.path() + "/x", "--workers", "2"};
    a.insert(a.end(), extra.begin(), extra.end());
    const auto r = run(a, 30s);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(extra[0] + " is compare's"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/x/summary.json"));
  }
  const auto r = run({bin("gossipctl"), "simulate", "--out", tmp.path() + "/y", "--workers", "257"}, 30s);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--no-train"), std::string::npos) << r.err;
}

TEST(Simulate, BadTimeModelInputIsRefusedInOneLineNamingIt) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--bandwidth", "0"}, "--bandwidth"},
      {{"--bandwidth", "0mbit", "--no-train"}, "--bandwidth"},
      {{"--stragglers", "w9=2"}, "no worker w9"},
      {{"--stragglers", "w1=0"}, "positive factor"},
      {{"--stragglers", "x1=2"}, "WORKER=VALUE"},
      {{"--slow-links", "w2=0mbit"}, "--slow-links"},
      {{"--drop-rate", "1"}, "--drop-rate"},
      {{"--latency-ms", "-1"}, "--latency-ms"},
      {{"--workers-per-host", "0"}, "--workers-per-host 0"},
      {{"--workers-per-host", "5"}, "--workers-per-host 5"},
      {{"--host-bandwidth", "fast"}, "--host-bandwidth"},
      {{"--train-limit", "100", "--batch", "64"}, "less than a batch"},
      {{"--no-train", "--algos", "crossover,pipeline"}, "no time model for pipeline"},
      {{"--algos", "crossover", "--deadline", "adaptive"}, "--deadline adaptive has no time model"},
      {{"--no-train", "--deadline", "adaptive"}, "--deadline adaptive has no time model"},
      {{"--groups", "auto"}, "simulate models them on a WAN only"},
      {{"--preset", "scaling"}, "--preset scaling is compare's"},
      {{"--preset", "wan", "--bandwidth", "1gbit"}, "leave out --bandwidth"},
      {{"--preset", "wan", "--latency-ms", "5"}, "leave out --latency-ms"},
      {{"--preset", "wan", "--slow-links", "w1=10mbit"}, "leave out --slow-links"},
      {{"--preset", "wan", "--workers-per-host", "2"}, "leave out --workers-per-host"},
      {{"--topology", "/nonexistent/wan.txt"}, "cannot read the topology file"},
  };
  expect_refused(cases);
}

// --preset wan in the time model: 16 hosts in 4 regions, each path's
// delay, loss and rate; the report names the network. A Crossover-SGD
// round waits at least on one path between regions (30 ms or more), and
// AllReduce-SGD's butterfly sends 15/8 of the model (0.94 MB) at its
// slowest path's rate (a 10 mbit host's, 1.4 s) and waits on a path
// between regions in 4 of its 8 steps.
TEST(Simulate, TheWanPresetIsModelledPathByPathAndNamedInTheReport) {
  TempDir tmp("gossipd_simulate_test");
  const auto r = run({bin("gossipctl"), "simulate", "--no-train", "--preset", "wan", "--algos",
                      "crossover,allreduce", "--rounds", "20", "--step-ms", "10", "--out", tmp.path() + "/w"},
                     120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = read_json_file<proto::CompareSummary>(tmp.path() + "/w/summary.json");
  EXPECT_NE(summary.time_model().find("a WAN of 16 hosts in 4 regions"), std::string::npos)
      << summary.time_model();
  ASSERT_EQ(summary.results_size(), 2);
  std::map<std::string, double> round_ms;
  for (const auto& res : summary.results()) {
    EXPECT_EQ(res.workers(), 16u) << res.algo();
    round_ms[res.algo()] = 1e3 / res.rounds_per_second();
  }
  EXPECT_GT(round_ms["crossover"], 10 + 30) << "a round crosses a region's border";
  EXPECT_GT(round_ms["allreduce"], 10 + 1400 + 4 * 30) << "the bytes at 10 mbit, 4 steps between regions";
}

// --groups auto on a WAN: the regions the workers would measure are the
// groups, named as --group auto names them; regions {w0, w2} and {w1, w3}
// are compare's --groups 2 (worker i in group i mod 2), and the members end
// bit for bit as compare's run of those groups on loopback.
TEST(Simulate, AutoGroupsOnAWanAreItsRegionsAsCompareGroupsThemByHand) {
  TempDir tmp("gossipd_simulate_test");
  const std::string wan = tmp.path() + "/wan.txt";
  std::ofstream(wan) << "region a w0 w2\nregion b w1 w3\ninside delay 1\nbetween delay 30\n";
  std::vector<std::string> flags = kSimulatedRun;
  flags.insert(flags.end(), {"--algos", "crossover"});
  expect_held_to_compare(tmp.path(), flags, {"crossover"}, 4, {"--groups", "2"},
                         {"--groups", "auto", "--topology", wan});
  const auto virt = end_records(tmp.path() + "/simulate", "crossover", 4);
  ASSERT_EQ(virt.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(virt[i].status().group(), i % 2 ? "auto-w1" : "auto-w0") << i;
}

TEST(Simulate, TimeOnlyModelsTenThousandWorkersWithoutReplicas) {
  TempDir tmp("gossipd_simulate_test");
  const auto r = run({bin("gossipctl"), "simulate", "--no-train", "--workers", "10000", "--rounds", "5",
                      "--bandwidth", "100mbit", "--step-ms", "10", "--out", tmp.path() + "/t"},
                     120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = read_json_file<proto::CompareSummary>(tmp.path() + "/t/summary.json");
  EXPECT_TRUE(summary.simulated());
  EXPECT_NE(summary.time_model().find("--no-train"), std::string::npos) << summary.time_model();
  ASSERT_EQ(summary.results_size(), 3);
  std::map<std::string, proto::CompareResult> by;
  for (const auto& res : summary.results()) {
    EXPECT_EQ(res.status(), "ok") << res.algo();
    EXPECT_EQ(res.workers(), 10000u);
    EXPECT_EQ(res.rounds(), 5u);
    EXPECT_EQ(res.final_mean_accuracy(), -1) << "nothing was trained";
    by[res.algo()] = res;
  }
  // Crossover sends the model once a round; the ring allreduce at 10,000
  // members pays 2 x 9,999 latencies beside its bytes.
  EXPECT_GT(by["crossover"].bytes_per_worker_per_round(), 0.9e6);
  EXPECT_GT(by["crossover"].rounds_per_second(), 4 * by["allreduce"].rounds_per_second());
}

// --workers-per-host: hierarchical Crossover's groups each on a host (16
// workers, --groups 4, 4 a host) average over the hosts' own links, and only
// the exchange between groups crosses the network: rounds far faster than
// with every worker its own host at 100 mbit, the same bytes counted.
TEST(Simulate, GroupsOnOneHostAverageOverItsOwnLink) {
  TempDir tmp("gossipd_simulate_test");
  std::map<std::string, proto::CompareResult> by;
  for (const std::string k : {"1", "4"}) {
    const auto r = run({bin("gossipctl"), "simulate", "--no-train", "--workers", "16", "--groups", "4",
                        "--workers-per-host", k, "--algos", "crossover", "--rounds", "20", "--bandwidth",
                        "100mbit", "--step-ms", "10", "--out", tmp.path() + "/k" + k},
                       120s);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto summary = read_json_file<proto::CompareSummary>(tmp.path() + "/k" + k + "/summary.json");
    ASSERT_EQ(summary.results_size(), 1);
    by[k] = summary.results(0);
  }
  EXPECT_EQ(by["1"].bytes_per_worker_per_round(), by["4"].bytes_per_worker_per_round());
  EXPECT_GT(by["4"].rounds_per_second(), 3 * by["1"].rounds_per_second());
}

// The segments the time model skips (late or dropped) are the ones the
// members skip: each protocol's workers together count as many as the model
// lost, and a run that loses some ends elsewhere than one that loses none.
TEST(Simulate, TheMembersSkipTheSegmentsTheModelLoses) {
  TempDir tmp("gossipd_simulate_test");
  for (const std::string algo : {"crossover", "sgp", "osgp"}) {
    std::map<std::string, std::string> hash;
    for (const std::string drop : {"0", "0.1"}) {
      const std::string out = tmp.path() + "/" + algo + drop;
      std::vector<std::string> a{bin("gossipctl"), "simulate", "--out",       out,
                                 "--algos",        algo,       "--drop-rate", drop};
      a.insert(a.end(), kSimulatedRun.begin(), kSimulatedRun.end());
      const auto r = run(a, 300s);
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
      const auto summary = read_json_file<proto::CompareSummary>(out + "/summary.json");
      ASSERT_EQ(summary.results_size(), 1);
      const std::string words = summary.time_model();
      const auto at = words.find("the model skipped ");
      const uint64_t model = at == std::string::npos ? 0 : std::stoull(words.substr(at + 18));
      EXPECT_EQ(summary.results(0).segments_skipped(), model) << algo << " drop " << drop << ": " << words;
      if (drop != "0") {
        EXPECT_GT(model, 0u) << algo;
      }
      hash[drop] = end_records(out, algo, 4).at(0).param_hash();
    }
    EXPECT_NE(hash["0"], hash["0.1"]) << algo << ": the members averaged what the model lost";
  }
}

TEST(Simulate, ReportsTheModelledClockAndKeepsTheWallClockBeside) {
  TempDir tmp("gossipd_simulate_test");
  std::vector<std::string> a{bin("gossipctl"), "simulate",  "--out",        tmp.path() + "/m",
                             "--algos",        "crossover", "--bandwidth",  "100mbit",
                             "--step-ms",      "20",        "--latency-ms", "0"};
  a.insert(a.end(), kSimulatedRun.begin(), kSimulatedRun.end());
  const auto r = run(a, 300s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = read_json_file<proto::CompareSummary>(tmp.path() + "/m/summary.json");
  ASSERT_EQ(summary.results_size(), 1);
  EXPECT_NE(summary.time_model().find("100mbit"), std::string::npos) << summary.time_model();
  // A round: the 20 ms step, then the model's bytes once over a 100 mbit link.
  const double model_bytes = summary.results(0).bytes_per_worker_per_round();
  EXPECT_NEAR(1.0 / summary.results(0).rounds_per_second(), 0.020 + model_bytes / 12.5e6, 0.002);
  for (int i = 0; i < 4; ++i) {
    const std::string w = tmp.path() + "/m/crossover/w" + std::to_string(i);
    const auto modelled = read_json_lines<proto::EpochRecord>(w + ".jsonl");
    const auto wall = read_json_lines<proto::EpochRecord>(w + ".wall.jsonl");
    ASSERT_EQ(modelled.size(), wall.size());
    ASSERT_FALSE(modelled.empty());
    EXPECT_EQ(modelled.back().round(), wall.back().round());
    EXPECT_EQ(modelled.back().test_accuracy(), wall.back().test_accuracy());
    EXPECT_NEAR(modelled.back().train_seconds(),
                static_cast<double>(modelled.back().round()) / summary.results(0).rounds_per_second(), 0.05);
  }
}

}  // namespace
}  // namespace gossipd::testing
