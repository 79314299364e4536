// gossipd run --algo sparse across real processes: P processes train one
// sparse network to the accuracy one process reaches alone; /status shows
// each process's share and the bytes per step the planner predicts; a dead
// process stops the others naming it; bad flags and partition files are one
// line and exit 2.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include "daemon/modes/sparse/sparse_status.pb.h"
#include "daemon/observe/message_json.h"
#include "tests/daemon/sync_run.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kBatch = 32, kNeurons = 256, kLayers = 4;
const std::vector<std::string> kNet{"--algo",    "sparse",
                                    "--neurons", std::to_string(kNeurons),
                                    "--layers",  std::to_string(kLayers),
                                    "--batch",   std::to_string(kBatch),
                                    "--threads", "1",
                                    "--quiet"};
const std::vector<std::string> kSparseEpoch =
    with(kNet, {"--train-limit", "3200", "--test-limit", "500", "--epochs", "1", "--timeout-ms", "20000"});

// Every process's "done" line (they hold different shares: no common hash).
struct SparseDone {
  int rounds = -1;
  double accuracy = -1;
};
std::vector<SparseDone> expect_done(Cluster& c, std::chrono::seconds timeout) {
  std::vector<SparseDone> all;
  for (int i = 0; i < c.size(); ++i) {
    EXPECT_TRUE(c.proc(i).wait(timeout)) << "process " << i << " did not finish";
    EXPECT_EQ(c.proc(i).exit_code(), 0) << c.proc(i).err();
    const auto end = c.end_record(i);
    if (!end || end->event() != "done") {
      ADD_FAILURE() << "process " << i << " wrote no done record: " << c.proc(i).out();
      continue;
    }
    all.push_back({static_cast<int>(end->round()), end->status().test_accuracy()});
  }
  return all;
}

// One process trains the whole network: the serial computation on the same
// kernels (RowTraining against SparseTrainer within 1e-5 after 100 steps is
// sparse_training_test.cc).
double one_process_accuracy() {
  Cluster alone(1, with(kSparseEpoch, {"--partition", "block"}));
  const std::vector<SparseDone> done = expect_done(alone, 120s);
  return done.empty() ? -1 : done[0].accuracy;
}

TEST(SparseRun, ProcessesEndWithTheAccuracyOfOneProcess) {
  const double alone = one_process_accuracy();
  EXPECT_GT(alone, 0.5);  // ten classes: chance is 0.1
  for (const char* partition : {"block", "random"}) {
    Cluster c(3, with(kSparseEpoch, {"--partition", partition}));
    for (const SparseDone& d : expect_done(c, 120s)) {
      EXPECT_EQ(d.rounds, 3200 / kBatch) << partition;  // one model: the whole set per epoch
      // The same model up to the summation order of the head's logits: the
      // same answers but for a sample or two.
      EXPECT_NEAR(d.accuracy, alone, 0.005) << partition;
    }
  }
}

TEST(SparseRun, StatusShowsTheShareAndTheBytesThePlannerPredicts) {
  Cluster c(2, with(kNet, {"--partition", "random", "--train-limit", "3200", "--test-limit", "100",
                           "--epochs", "1000"}));
  wait_for_rounds(c, 3);
  double forward = 0, owned = 0, words = -1;
  for (int i = 0; i < 2; ++i) {
    const proto::Status s = fetch_status(c.http_port(i));
    const proto::SparseStatus sp = daemon::mode_status<proto::SparseStatus>(s);
    EXPECT_EQ(s.state(), "training");
    EXPECT_EQ(sp.processes(), 2u);
    EXPECT_EQ(sp.rank(), static_cast<uint32_t>(i));  // w0, w1 sorted
    EXPECT_EQ(sp.partition(), "random");
    EXPECT_EQ(sp.neurons(), static_cast<uint32_t>(kNeurons));
    EXPECT_EQ(sp.layers(), static_cast<uint32_t>(kLayers));
    EXPECT_GT(sp.edges_owned(), 0u);
    EXPECT_GT(sp.words_per_product(), 0.0);
    EXPECT_GE(sp.imbalance(), 1.0);
    EXPECT_GT(sp.backward_bytes_per_step(), 0.0);
    EXPECT_GT(sp.logits_bytes_per_step(), 0.0);  // the head's partial logits
    if (words >= 0) {
      EXPECT_EQ(sp.words_per_product(), words);  // one plan
    }
    words = sp.words_per_product();
    forward += sp.forward_bytes_per_step();
    owned += sp.neurons_owned();
  }
  EXPECT_EQ(owned, kNeurons * kLayers);
  // Every process receives per product the words the planner counted, for
  // each sample of the batch.
  EXPECT_DOUBLE_EQ(forward, words * kLayers * kBatch * sizeof(float));
}

TEST(SparseRun, ADeadProcessStopsTheOthersNamingIt) {
  Cluster c(3, with(kNet, {"--partition", "random", "--train-limit", "3200", "--test-limit", "100",
                           "--epochs", "1000", "--timeout-ms", "2000", "--heartbeat-ms", "100",
                           "--failure-timeout-ms", "1500"}));
  wait_for_rounds(c, 2);
  c.proc(1).signal(SIGKILL);
  expect_stopped_naming(c, {0, 2}, 15s, "sparse process 'w1' is gone");
}

TEST(SparseRun, BadFlagsAreOneLineAndExitTwo) {
  expect_refused_by(2, {"--algo", "sparse", "--neurons", "100"}, "--neurons 100: the network is a RadiX-Net");
  expect_refused_by(2, with(kNet, {"--checkpoint-dir", "/tmp"}), "--algo sparse writes no checkpoints");
  expect_refused_by(2, with(kNet, {"--optimizer", "lars"}), "--optimizer lars is not for --algo sparse");
  expect_refused_by(2, with(kNet, {"--partition", "metis"}),
                    "--partition metis: neither block, random, hypergraph nor a partition file");
  // random, not auto (hypergraph): Zoltan's OpenMPI leaks at exit where
  // LeakSanitizer cannot name it, as in sparse_mode_tests.
  expect_refused_by(2, with(kNet, {"--partition", "random", "--train-limit", "10"}),
                    "--batch 32 is more than the 10 training samples");
  expect_refused_by(2, {"--algo", "allreduce", "--neurons", "256"}, "--neurons");
  const RunResult compare = run({bin("gossipctl"), "compare", "--algos", "allreduce,sparse"}, 60s);
  EXPECT_EQ(compare.exit_code, 2) << compare.err;
  EXPECT_EQ(std::count(compare.err.begin(), compare.err.end(), '\n'), 1) << compare.err;
  EXPECT_NE(compare.err.find("compare does not run the sparse mode"), std::string::npos) << compare.err;
}

// A partition file written for two processes, given to three, and one
// written for another network: one line each, naming the file's problem.
TEST(SparseRun, PartitionFilesForAnotherPOrNetworkAreOneLine) {
  TempDir tmp("gossipd_sparse_run");
  // Zoltan starts OpenMPI, whose plugins leak at exit where LeakSanitizer
  // cannot name them (as in sparse_mode_tests): no leak check for the plan.
  const RunResult w =
      run({"/usr/bin/env", "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1", bin("gossipctl"), "plan", "sparse",
           "--neurons", "64", "--layers", "2", "--procs", "2", "--write-partitions", tmp.file("parts")},
          60s);
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const std::string file = tmp.file("parts") + "/block-p2.partition";
  const std::vector<std::string> small{"--algo", "sparse", "--neurons", "64", "--partition", file};
  expect_refused_by(3, with(small, {"--layers", "2"}), "is for 2 processes, not 3");
  expect_refused_by(2, with(small, {"--layers", "3"}), file);
}

}  // namespace
}  // namespace gossipd::testing
