// gossipd run --algo grid across real processes: the cells end identical,
// as accurate as the serial trainer with the same seed and batch, and bad
// shapes are one line and exit 2.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include "daemon/cluster/checkpoint.h"
#include "daemon/modes/grid/grid_status.pb.h"
#include "daemon/observe/message_json.h"
#include "tests/daemon/sync_run.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kGridData{"--train-limit", "3200", "--test-limit", "500",
                                         "--batch",       "32",   "--threads",    "1"};

const std::vector<std::string> kGridEpoch = with(kGridData, {"--epochs", "1"});

double serial_accuracy(const std::vector<std::string>& flags = kGridEpoch) {
  return serial_test_accuracy(flags);
}

TEST(GridRun, CellsEndIdenticalAndAsAccurateAsTheSerialRun) {
  Cluster c(4, with(kGridEpoch, {"--algo", "grid", "--grid", "2x2", "--quiet", "--timeout-ms", "10000"}));
  const Done done = expect_identical_cells(c, 180s);
  EXPECT_EQ(done.rounds, 3200 / 32);  // one replica: the whole set per epoch
  EXPECT_NEAR(done.accuracy, serial_accuracy(), 0.005);
}

// Gholami et al.'s second claim: domain parallelism takes a convolutional
// network past the batch limit. 8 processes at a global batch of 4, where
// pure batch parallelism (1x8) is refused, as 2 image-row blocks x 4
// one-sample columns.
TEST(GridRun, TheCnnTrainsOnEightProcessesAtBatchFourAsTwoByFour) {
  const std::vector<std::string> flags{"--model", "cnn",  "--train-limit", "400", "--test-limit", "1000",
                                       "--batch", "4",    "--threads",     "1",   "--epochs",     "1",
                                       "--lr",    "0.005"};
  Cluster c(8, with(flags, {"--algo", "grid", "--grid", "2x4", "--quiet", "--timeout-ms", "20000"}));
  const Done done = expect_identical_cells(c, 240s);
  EXPECT_EQ(done.rounds, 400 / 4);
  const double serial = serial_accuracy(flags);
  EXPECT_GT(serial, 0.5);  // it learned (0.663; chance is 0.1)
  EXPECT_NEAR(done.accuracy, serial, 0.005);
  expect_refused_by(8, with(flags, {"--algo", "grid", "--grid", "1x8"}),
                    "batch 4 is smaller than the 8 grid columns");
}

// Killed mid-run and restarted with the same command lines, the cells go on
// from their own checkpoints (one cell's newest removed: the others go back
// to that cell's round) and end where a run never stopped ends, bit for bit.
// The same checkpoints under another shape are refused in one line.
TEST(GridRun, ResumesFromItsCheckpointsAsIfNeverStopped) {
  const std::vector<std::string> flags{"--train-limit", "2400",
                                       "--test-limit",  "200",
                                       "--batch",       "8",
                                       "--threads",     "1",
                                       "--epochs",      "1",
                                       "--algo",        "grid",
                                       "--quiet",       "--timeout-ms",
                                       "10000"};
  Cluster whole(4, with(flags, {"--grid", "2x2"}));
  const std::string never_stopped = expect_identical_cells(whole, 120s).hash;

  TempDir dir("gossipd_grid_ckpt");
  const auto ckpt = [&](int i) { return dir.file(Cluster::id(i) + ".ckpt"); };
  Cluster c(4, with(flags, {"--grid", "2x2", "--checkpoint-every", "20", "--checkpoint-keep", "3"}),
            [&](int i) {
              return std::vector<std::string>{"--checkpoint-dir", ckpt(i)};
            });
  ASSERT_TRUE(wait_until(
      [&] {
        for (int i = 0; i < 4; ++i)
          if (newest_round(ckpt(i)) < 40) return false;
        return true;
      },
      60s));
  for (int i = 0; i < 4; ++i) c.proc(i).signal(SIGKILL);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(c.proc(i).wait(60s));
  ASSERT_LT(newest_round(ckpt(0)), 300u) << "the run ended before the kill";
  // Cell 1's newest goes, and any round no other cell saved (a cell may end
  // a step first), so that some cell has to go back.
  const uint64_t others = std::max({newest_round(ckpt(0)), newest_round(ckpt(2)), newest_round(ckpt(3))});
  do {
    std::filesystem::remove(daemon::list_checkpoints(ckpt(1)).at(0));
  } while (newest_round(ckpt(1)) >= others);
  const uint64_t back_to = newest_round(ckpt(1));
  ASSERT_GT(back_to, 0u);
  std::vector<uint64_t> saved;
  for (int i = 0; i < 4; ++i) saved.push_back(newest_round(ckpt(i)));

  std::vector<int> again;
  for (int i = 0; i < 4; ++i) again.push_back(c.restart(i));
  const Done resumed = expect_identical_cells(c, 120s, again);
  EXPECT_EQ(resumed.rounds, 300);
  EXPECT_EQ(resumed.hash, never_stopped) << "resumed at round " << back_to;
  EXPECT_NE(c.proc(again[1]).out().find("resumes from its checkpoint of round " + std::to_string(back_to)),
            std::string::npos)
      << c.proc(again[1]).out();
  const std::string went_back = "goes back to its checkpoint of round " + std::to_string(back_to);
  for (int i : {0, 2, 3}) {
    EXPECT_EQ(c.proc(again[i]).out().find(went_back) != std::string::npos, saved[i] > back_to)
        << "cell " << i << " saved round " << saved[i] << ": " << c.proc(again[i]).out();
  }

  const RunResult other =
      run(with({bin("gossipd"), "run", "--id", "w0", "--listen", "tcp://127.0.0.1:0", "--peers",
                "w1=tcp://127.0.0.1:9,w2=tcp://127.0.0.1:9,w3=tcp://127.0.0.1:9", "--checkpoint-dir", ckpt(0),
                "--check-config"},
               with(flags, {"--grid", "4x1"})),
          60s);
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_EQ(std::count(other.err.begin(), other.err.end(), '\n'), 1) << other.err;
  EXPECT_NE(other.err.find("hold grid 2x2 cell (row 0, column 0), this worker is grid 4x1 cell (row 0, "
                           "column 0): restart with the flags that place it"),
            std::string::npos)
      << other.err;
}

TEST(GridRun, StatusAndMetricsShowTheShapeTheCellAndTheBytesByKind) {
  Cluster c(4, with(kGridData, {"--algo", "grid", "--grid", "2x2", "--quiet", "--epochs", "1000"}));
  const uint16_t port = c.http_port(3);
  ASSERT_GT(port, 0) << c.proc(3).out() << c.proc(3).err();
  ASSERT_TRUE(
      wait_until([&] { return fetch_metrics(port).value("gossipd_rounds_total").value_or(0) >= 2; }, 60s));
  const MetricsText m = fetch_metrics(port);
  EXPECT_EQ(m.value("gossipd_grid_shape", {{"dim", "rows"}}), 2) << m;
  EXPECT_EQ(m.value("gossipd_grid_shape", {{"dim", "cols"}}), 2) << m;
  EXPECT_EQ(m.value("gossipd_grid_cell", {{"dim", "row"}}), 1) << m;  // w3: rank 3 = row 1 of column 1
  EXPECT_EQ(m.value("gossipd_grid_cell", {{"dim", "col"}}), 1) << m;
  for (const char* kind : {"forward", "input_gradient", "weight_gradient"}) {
    EXPECT_GT(m.value("gossipd_grid_payload_bytes_total", {{"kind", kind}}).value_or(0), 0) << kind << m;
    EXPECT_GT(m.value("gossipd_grid_comm_seconds_total", {{"kind", kind}}).value_or(0), 0) << kind << m;
  }
  EXPECT_EQ(m.value("gossipd_grid_payload_bytes_total", {{"kind", "halo"}}), 0) << m;  // no convolutions
  const proto::Status status = fetch_status(port);
  EXPECT_EQ(status.algo(), "grid");
  const proto::GridStatus g = daemon::mode_status<proto::GridStatus>(status);
  EXPECT_EQ(std::vector<uint32_t>({g.rows(), g.cols(), g.row(), g.col()}),
            std::vector<uint32_t>({2, 2, 1, 1}));
  // The default MLP at batch 32 on 2 x 2 (gossipctl plan grid gives the same words):
  // allgather of (256 + 128 + 10) outputs x 16 samples, one block of two sent.
  EXPECT_DOUBLE_EQ(g.forward_bytes_per_step(), 4.0 * (128 + 64 + 5) * 16);
  EXPECT_GT(g.weight_gradient_bytes_per_step(), 0.0);
  EXPECT_EQ(g.halo_bytes_per_step(), 0.0);
  EXPECT_GT(g.forward_seconds_per_step(), 0.0);
  EXPECT_GT(g.weight_gradient_seconds_per_step(), 0.0);
  EXPECT_EQ(g.halo_seconds_per_step(), 0.0);
}

TEST(GridRun, ADeadCellStopsEveryOtherCellNamingIt) {
  Cluster c(4,
            with(kGridData, {"--algo", "grid", "--grid", "2x2", "--quiet", "--epochs", "1000", "--timeout-ms",
                             "2000", "--heartbeat-ms", "100", "--failure-timeout-ms", "1500"}));
  wait_for_rounds(c, 2);
  c.proc(2).signal(SIGKILL);
  // The step's timeout, then at most the failure timeout for membership to drop it.
  expect_stopped_naming(c, {0, 1, 3}, 15s, "grid cell 'w2' is gone");
}

void expect_refused(const std::vector<std::string>& extra, const std::string& needle) {
  expect_refused_by(4, extra, needle);
}

TEST(GridRun, ShapesThatDoNotFitAreOneLineAndExitTwo) {
  expect_refused({"--algo", "grid", "--grid", "3x2"}, "--grid 3x2 has 6 cells, the cluster 4 members");
  expect_refused({"--algo", "grid", "--grid", "2by2"}, "is not PRxPC");
  expect_refused({"--algo", "grid"}, "--algo grid needs --grid PRxPC");
  expect_refused({"--algo", "allreduce", "--grid", "2x2"}, "--grid is for --algo grid");
  expect_refused({"--algo", "grid", "--grid", "1x4", "--batch", "3"},
                 "batch 3 is smaller than the 4 grid columns");
  expect_refused({"--algo", "grid", "--grid", "4x1", "--hidden", "256,3"},
                 "dense2 has 3 rows, fewer than the 4");
}

TEST(GridRun, AJoinerIsRefusedInOneLine) {
  const RunResult r = run({bin("gossipd"), "run", "--algo", "grid", "--grid", "1x1", "--id", "late",
                           "--listen", "tcp://127.0.0.1:0", "--join", "tcp://127.0.0.1:9"},
                          60s);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--algo grid takes no joiners"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gossipd::testing
