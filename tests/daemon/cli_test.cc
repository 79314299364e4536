// The binaries as a user runs them: bad input gets one clear line and exit 2.
#include "daemon/config/cli.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <type_traits>

#include "daemon/cluster/checkpoint.h"
#include "daemon/cluster/join.h"
#include "daemon/cluster/state_transfer.h"
#include "daemon/ctl/compare_hosts.h"
#include "protocol/wire/errors.h"
#include "tests/daemon/sync_run.h"
#include "tests/support/process.h"
#include "tests/support/records.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::vector<std::string> train_args(std::vector<std::string> extra, bool quiet = true) {
  std::vector<std::string> a{bin("gossipd"), "train", "--train-limit", "600", "--test-limit", "300"};
  if (quiet) a.push_back("--quiet");
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

void expect_usage_error(const std::vector<std::string>& argv, const std::string& needle) {
  RunResult r = run(argv, 60s);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.term_signal, 0) << "crashed with signal " << r.term_signal;
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(Cli, RejectsBadFlagsWithOneLine) {
  expect_usage_error(train_args({"--no-such-flag"}), "--no-such-flag");
  expect_usage_error(train_args({"--model", "resnet"}), "resnet");
  expect_usage_error(train_args({"--batch", "0"}), "--batch");
  expect_usage_error(train_args({"--lr", "-0.1"}), "--lr");
  expect_usage_error(train_args({"--epochs", "zero"}), "--epochs");
  expect_usage_error(train_args({"--momentum", "0", "--nesterov"}), "Nesterov");
  expect_usage_error(train_args({"--data-congestion", "Reno!"}), "--data-congestion");
  expect_usage_error({bin("gossipd")}, "subcommand");
  expect_usage_error({bin("gossipd"), "run", "--id", "w0", "--rejoin", "-1"}, "--rejoin");
  expect_usage_error({bin("gossipd"), "run", "--id", "w0", "--algo", "crossover", "--deadline", "soon"},
                     "--deadline");
  expect_usage_error({bin("gossipd"), "run", "--id", "w0", "--algo", "crossover", "--deadline-quantile", "0"},
                     "--deadline-quantile");
  expect_usage_error({bin("gossipd"), "run", "--id", "w0", "--algo", "crossover", "--group", "auto"},
                     "--group auto forms the groups of --hierarchical");
  expect_usage_error({bin("gossipd"), "run", "--id", "w0", "--algo", "allreduce", "--group", "auto"},
                     "--algo allreduce does not group its members by label");
  expect_usage_error({bin("gossipd"), "run", "--id", "w0", "--group-near-ms", "0"}, "--group-near-ms");
}

TEST(Cli, MissingDatasetNamesPackageAndFlag) {
  expect_usage_error(train_args({"--data", "/nonexistent/fashion"}), "dataset-fashion-mnist");
  expect_usage_error(train_args({"--data", "/nonexistent/fashion"}), "--data");
}

// --data, else $GOSSIPD_DATA_DIR, else the Debian package's directory.
TEST(Cli, TheDataDirectoryIsTheFlagsElseTheEnvironmentsElseThePackages) {
  const char* was = std::getenv("GOSSIPD_DATA_DIR");
  const std::string saved = was ? was : "";
  ::setenv("GOSSIPD_DATA_DIR", "/nonexistent/from-env", 1);
  expect_usage_error(train_args({}), "file /nonexistent/from-env/train-");
  expect_usage_error(train_args({"--data", "/nonexistent/flag"}), "file /nonexistent/flag/train-");
  if (was) {
    ::setenv("GOSSIPD_DATA_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("GOSSIPD_DATA_DIR");
  }
  const RunResult r = run(train_args({"--help"}), 60s);
  EXPECT_NE(r.out.find("GOSSIPD_DATA_DIR"), std::string::npos) << r.out;
}

TEST(Cli, TruncatedDatasetIsOneLine) {
  TempDir tmp("gossipd_cli_truncated");
  const fs::path dir = tmp.path();
  const fs::path src(GOSSIPD_TEST_DATA_DIR);
  for (const char* f :
       {"train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    fs::copy_file(src / f, dir / f);
  }
  // A train image file cut short: a valid header promising 60000 images, 10 of them present.
  gzFile g = gzopen((dir / "train-images-idx3-ubyte.gz").c_str(), "wb");
  const unsigned char header[] = {0, 0, 8, 3, 0, 0, 0xea, 0x60, 0, 0, 0, 28, 0, 0, 0, 28};
  gzwrite(g, header, sizeof(header));
  std::vector<unsigned char> pixels(784 * 10, 1);
  gzwrite(g, pixels.data(), static_cast<unsigned>(pixels.size()));
  gzclose(g);
  expect_usage_error(train_args({"--data", dir.string()}), "truncated");
  // Wrong magic: a label file where the images should be.
  fs::remove(dir / "train-images-idx3-ubyte.gz");
  fs::copy_file(src / "train-labels-idx1-ubyte.gz", dir / "train-images-idx3-ubyte.gz");
  expect_usage_error(train_args({"--data", dir.string()}), "magic");
}

TEST(Cli, UnwritableMetricsFileIsOneLine) {
  expect_usage_error(train_args({"--metrics-out", "/nonexistent/dir/m.jsonl"}), "/nonexistent/dir");
}

TEST(Cli, TrainWritesOneJsonLinePerEpoch) {
  TempDir dir("gossipd_cli_metrics");
  const std::string out = dir.file("m.jsonl");
  RunResult r = run(train_args({"--epochs", "2", "--metrics-out", out}, false), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("epoch   2/2"), std::string::npos) << r.out;
  const auto records = read_records(out);
  ASSERT_EQ(records.size(), 2u);
  for (size_t i = 0; i < records.size(); ++i) {
    const proto::EpochRecord& rec = records[i];
    EXPECT_EQ(rec.epoch(), i + 1);
    EXPECT_GT(rec.loss(), 0) << rec.DebugString();
    EXPECT_GT(rec.train_accuracy(), 0) << rec.DebugString();
    EXPECT_GT(rec.test_accuracy(), 0) << rec.DebugString();
    EXPECT_GT(rec.samples_per_second(), 0) << rec.DebugString();
    EXPECT_GT(rec.wall_seconds(), 0) << rec.DebugString();
  }
}

TEST(Cli, TrainerBenchPrintsRatio) {
  RunResult r = run({bin("gossipctl"), "bench", "trainer", "--threads", "1", "--steps", "2", "--trials", "1",
                     "--batch", "32"},
                    60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* key : {"\"train_gflops\":", "\"sgemm_gflops\":", "\"ratio\":", "\"threads\":1"}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << r.out;
  }
}

// --procs ranks what gossipd run's planner ranks: every schedule it prices
// (it once ranked 1f1b alone, the non-ranking default).
TEST(Cli, PlanPipelineRanksEverySchedule) {
  TempDir cache("gossipd_cli_plan");
  RunResult r = run({bin("gossipctl"), "plan", "pipeline", "--model", "mlp", "--hidden", "32", "--batch",
                     "32", "--procs", "2", "--json", "--reps", "1", "--cache-dir", cache.path()},
                    60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* schedule : {"\"schedule\":\"gpipe\"", "\"schedule\":\"1f1b\"", "\"schedule\":\"zb\""})
    EXPECT_NE(r.out.find(schedule), std::string::npos) << schedule << " in " << r.out;
  EXPECT_EQ(r.out.find("1f1b-async"), std::string::npos) << r.out;  // only when named
}

// Every collective bench, both data paths, pieces smaller than a block.
TEST(Cli, CollectiveBenchesAreExact) {
  const std::vector<std::vector<std::string>> cases = {
      {"allreduce", "--procs", "3", "--bytes", "4100", "--chunk-bytes", "256"},
      {"allreduce", "--procs", "2", "--floats", "1000", "--path", "zmq"},
      {"allgather", "--procs", "3", "--bytes", "8"},
      {"allgather", "--procs", "2", "--bytes", "65536", "--chunk-bytes", "4096", "--path", "zmq"},
      {"reduce-scatter", "--procs", "3", "--bytes", "40000", "--chunk-bytes", "1024", "--spin-us", "0"},
      {"pingpong", "--procs", "2", "--bytes", "100000", "--chunk-bytes", "4096"},
      {"pingpong", "--procs", "2", "--bytes", "8", "--path", "zmq"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv{bin("gossipctl"), "bench"};
    argv.insert(argv.end(), c.begin(), c.end());
    for (const char* a : {"--reps", "3", "--warmup", "1", "--bind-to", "none", "--timeout-ms", "20000"}) {
      argv.push_back(a);
    }
    RunResult r = run(argv, 60s);
    ASSERT_EQ(r.exit_code, 0) << c[0] << ": " << r.err;
    EXPECT_EQ(lines(r.out), 1u) << r.out;
    const std::string bench = std::string("\"bench\":\"").append(c[0]).append("\"");
    for (const std::string& key : {bench, std::string("\"impl\":\"gossipd\""), std::string("\"exact\":true"),
                                   std::string("\"min_seconds\":"), std::string("\"algbw_gbps\":")}) {
      EXPECT_NE(r.out.find(key), std::string::npos) << r.out;
    }
  }
}

TEST(Cli, CollectiveBenchRejectsBadSizes) {
  expect_usage_error({bin("gossipctl"), "bench", "pingpong", "--procs", "3"}, "--procs");
  expect_usage_error({bin("gossipctl"), "bench", "allgather", "--bytes", "6"}, "--bytes");
  expect_usage_error({bin("gossipctl"), "bench", "allreduce", "--path", "udp"}, "--path");
  expect_usage_error({bin("gossipctl"), "bench", "allreduce", "--congestion", "Reno!"}, "--congestion");
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

// gossipctl sparse: a generated network runs, its categories are kept and
// checked, and a damaged file or a wrong width is one line and exit 2.
TEST(Cli, SparseGenerateAndInferKeepTheCategoriesAndRefuseBadFiles) {
  TempDir tmp("gossipd_cli_sparse");
  const std::string dir = tmp.path();
  const std::vector<std::string> gen{
      bin("gossipctl"), "sparse", "generate", "--neurons", "64",     "--layers",           "4",
      "--out",          dir,      "--inputs", "300",       "--data", GOSSIPD_TEST_DATA_DIR};
  RunResult r = run(gen, 60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> infer{bin("gossipctl"), "sparse", "infer", dir};
  r = run(infer, 60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("300 inputs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("written to"), std::string::npos) << r.out;
  r = run(infer, 60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the same as"), std::string::npos) << r.out;

  expect_usage_error(gen, "--force");
  expect_usage_error({bin("gossipctl"), "sparse", "infer", dir, "--neurons", "256"}, "n256-l1.tsv");
  const fs::path cats = fs::path(dir) / "neuron64-l4-categories.tsv";
  const std::string kept = read_file(cats);
  write_file(cats, kept.substr(kept.find('\n') + 1));  // one category less
  expect_usage_error(infer, "differ");
  write_file(cats, kept);
  const fs::path layer = fs::path(dir) / "neuron64" / "n64-l2.tsv";
  const std::string text = read_file(layer);
  write_file(layer, text.substr(0, text.size() - 3));  // cut short
  expect_usage_error(infer, "n64-l2.tsv: the last line has no newline");
  write_file(layer, "1\t2\t0.5\n1\tx\t1\n");
  expect_usage_error(infer, "n64-l2.tsv:2: expected a whole number");
}

// gossipctl bench sparse: three processes give the serial reference's
// categories (a training step: its loss) and move the planned bytes
// (exact), under a partition given by name or read from a file; a file made
// for another P, or a batch over the inputs, is one line, exit 2.
TEST(Cli, BenchSparseRunsRowParallelAsTheSerialReferenceInNamespacesTooAndRefusesAnotherPsPartition) {
  TempDir tmp("gossipd_cli_bench_sparse");
  const std::string dir = tmp.path();
  RunResult r = run({bin("gossipctl"), "sparse", "generate", "--neurons", "64", "--layers", "6", "--out", dir,
                     "--inputs", "200", "--shuffle", "3", "--data", GOSSIPD_TEST_DATA_DIR},
                    60s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> bench{bin("gossipctl"), "bench", "sparse",  dir,  "--reps",    "1",
                                       "--warmup",       "0",     "--block", "32", "--bind-to", "none"};
  r = run(with(bench, {"--procs", "3", "--partition", "random"}), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"procs\":3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"exact\":true"), std::string::npos) << r.out;
  // A training step: the first step's loss is the serial trainer's, every
  // step moves the planned bytes.
  r = run(with(bench, {"--procs", "3", "--partition", "random", "--train", "--batch", "16"}), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"run\":\"train step\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"exact\":true"), std::string::npos) << r.out;
  expect_usage_error(with(bench, {"--train", "--batch", "201"}), "--batch 201: between 1 and the 200 inputs");

  const std::string parts = tmp.file("parts");
  // Zoltan starts OpenMPI, whose plugins leak at exit where LeakSanitizer
  // cannot name them (as in sparse_mode_tests): no leak check for this one.
  r = run({"/usr/bin/env", "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1", bin("gossipctl"), "plan", "sparse",
           "--dir", dir, "--neurons", "64", "--layers", "6", "--procs", "2", "--write-partitions", parts},
          120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run(with(bench, {"--procs", "2", "--partition", parts + "/hypergraph-p2.partition"}), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"exact\":true"), std::string::npos) << r.out;
  expect_usage_error(with(bench, {"--procs", "3", "--partition", parts + "/block-p2.partition"}),
                     "is for 2 processes, not 3");
  expect_usage_error(with(bench, {"--bandwidth", "1gbit"}), "--bandwidth 1gbit: a tc rate");
  if (geteuid() != 0) return;  // network namespaces need root (CI runs as root)
  // Three hosts, each a namespace with a capped link: as exact, nothing left behind.
  ASSERT_FALSE(daemon::find_program("ip").empty()) << "--netns needs iproute2";
  const NetworkState before = network_state();
  r = run(with(bench, {"--procs", "3", "--partition", "random", "--netns", "--bandwidth", "100mbit"}), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"hosts\":\"netns 100mbit\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"exact\":true"), std::string::npos) << r.out;
  EXPECT_TRUE(nothing_left_beyond(before, 120s)) << "a namespace or a link was left behind";
}

// True when `error`, thrown, is caught as the root and keeps its message.
template <typename E>
bool caught_by_error_root(const E& error) {
  try {
    throw error;
  } catch (const protocol::Error& e) {
    return std::string(e.what()) == error.what();
  } catch (...) {
    return false;
  }
}

// Every error gossipd throws on purpose derives from protocol::Error, so one
// handler can tell them from a bug; each is still a std::runtime_error, so
// the existing handlers (and run_cli's exit codes) catch what they caught.
TEST(ErrorRoot, EveryDaemonErrorIsAProtocolError) {
  static_assert(std::is_base_of_v<std::runtime_error, protocol::Error>);
  static_assert(std::is_base_of_v<protocol::Error, protocol::TransportError>);
  static_assert(std::is_base_of_v<protocol::Error, protocol::PeerTimeout>);
  static_assert(std::is_base_of_v<protocol::Error, daemon::UsageError>);
  static_assert(std::is_base_of_v<protocol::Error, daemon::DaemonError>);
  static_assert(std::is_base_of_v<protocol::Error, daemon::CheckpointError>);
  static_assert(std::is_base_of_v<protocol::Error, daemon::JoinRefused>);
  static_assert(std::is_base_of_v<protocol::Error, daemon::NoMemberAnswered>);
  static_assert(std::is_base_of_v<protocol::Error, daemon::StateTransferError>);
  // Bad arguments stay std::invalid_argument: run_cli maps them to exit 2.
  static_assert(std::is_base_of_v<std::invalid_argument, protocol::ProtocolConfigError>);

  EXPECT_TRUE(caught_by_error_root(daemon::UsageError("bad flag")));
  EXPECT_TRUE(caught_by_error_root(daemon::DaemonError("cannot write x")));
  EXPECT_TRUE(caught_by_error_root(daemon::CheckpointError("corrupt (CRC-32 mismatch)")));
  EXPECT_TRUE(caught_by_error_root(daemon::JoinRefused("the cluster refused this worker")));
  EXPECT_TRUE(caught_by_error_root(daemon::NoMemberAnswered("no member answered")));
  EXPECT_TRUE(caught_by_error_root(daemon::StateTransferError("state download stalled")));
  EXPECT_TRUE(caught_by_error_root(protocol::PeerTimeout("w0", "w1", 5ms, "a test")));
}

}  // namespace
}  // namespace gossipd::testing
