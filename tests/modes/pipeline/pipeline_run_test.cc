// gossipd run --algo pipeline across real processes: the stages end with
// one model, as accurate as the serial trainer with the same seed and batch;
// /status and /metrics show the stage; a dead stage stops the others naming
// it; bad shapes are one line and exit 2.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "daemon/modes/pipeline/pipeline_status.pb.h"
#include "daemon/observe/message_json.h"
#include "tests/daemon/sync_run.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kPipelineData{"--model", "cnn", "--train-limit", "1600", "--test-limit", "500",
                                             "--batch", "32",  "--threads",     "1"};
const std::vector<std::string> kPipelineEpoch = with(kPipelineData, {"--epochs", "1"});

TEST(PipelineRun, StagesEndWithOneModelAsAccurateAsTheSerialRun) {
  Cluster c(2,
            with(kPipelineEpoch, {"--algo", "pipeline", "--stages", "2", "--micro-batches", "4", "--quiet"}));
  const Done done = expect_identical_cells(c, 180s);
  EXPECT_EQ(done.rounds, 1600 / 32);  // one replica: the whole set per epoch
  EXPECT_NEAR(done.accuracy, serial_test_accuracy(kPipelineEpoch), 0.003);
}

TEST(PipelineRun, StatusAndMetricsShowTheStageItsLayersAndTheBytes) {
  Cluster c(
      2, with(kPipelineData, {"--algo", "pipeline", "--stages", "2", "--partition", "4,6", "--micro-batches",
                              "4", "--schedule", "1f1b", "--quiet", "--epochs", "1000"}));
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0) << c.proc(0).out() << c.proc(0).err();
  ASSERT_TRUE(
      wait_until([&] { return fetch_metrics(port).value("gossipd_rounds_total").value_or(0) >= 2; }, 60s));
  const MetricsText m = fetch_metrics(port);
  EXPECT_EQ(m.value("gossipd_pipeline_shape", {{"dim", "stages"}}), 2) << m;
  EXPECT_EQ(m.value("gossipd_pipeline_place", {{"dim", "stage"}}), 0) << m;
  EXPECT_GT(m.value("gossipd_pipeline_payload_bytes_total", {{"kind", "activation"}}).value_or(0), 0) << m;
  EXPECT_EQ(m.value("gossipd_pipeline_payload_bytes_total", {{"kind", "input_gradient"}}), 0)
      << m;  // first stage
  const proto::PipelineStatus p = daemon::mode_status<proto::PipelineStatus>(fetch_status(port));
  EXPECT_EQ(p.partition(), "4,6");
  EXPECT_EQ(p.layers(), "0-3 conv2d relu maxpool conv2d");
  EXPECT_EQ(p.most_in_flight(), 2u);  // 1f1b: K - stage
  // Two micro-batches of 8: the input and the four layers' outputs each.
  EXPECT_EQ(p.most_stashed_bytes(), 2u * 4 * 8 * (28 * 28 + 28 * 28 * 32 * 2 + 14 * 14 * 32 + 14 * 14 * 64));
  // conv2's output, 14 x 14 x 64 floats a sample, 8 samples a micro-batch, 4 micro-batches.
  EXPECT_DOUBLE_EQ(p.activation_bytes_per_step(), 4.0 * 14 * 14 * 64 * 8 * 4);
  EXPECT_GE(p.bubble(), 0.0);
  EXPECT_LT(p.bubble(), 1.0);
}

// No shape given: rank 0 prices every plan of the two processes and both
// run the fastest; /status says which and what step it predicted.
TEST(PipelineRun, PlannedByDefaultAndStatusSaysThePlan) {
  TempDir cache;
  // A small MLP: its profile is quick to make, also under the sanitizers.
  Cluster c(2, {"--model", "mlp", "--hidden", "32", "--train-limit", "640", "--test-limit", "100", "--batch",
                "32", "--threads", "1", "--algo", "pipeline", "--quiet", "--epochs", "1000", "--cache-dir",
                cache.path()});
  const uint16_t port = c.http_port(1);
  ASSERT_GT(port, 0) << c.proc(1).out() << c.proc(1).err();
  ASSERT_TRUE(
      wait_until([&] { return fetch_metrics(port).value("gossipd_rounds_total").value_or(0) >= 2; }, 90s));
  const proto::PipelineStatus p = daemon::mode_status<proto::PipelineStatus>(fetch_status(port));
  EXPECT_EQ(p.stages() * p.replicas(), 2u);
  EXPECT_EQ(32 % (p.replicas() * p.micro_batches()), 0u);
  EXPECT_GT(p.predicted_step_seconds(), 0.0);
  EXPECT_EQ(p.plan(), "rank 0's plan");
  const proto::PipelineStatus first =
      daemon::mode_status<proto::PipelineStatus>(fetch_status(c.http_port(0)));
  EXPECT_EQ(first.plan().rfind("planned: the fastest of ", 0), 0u) << first.plan();
  EXPECT_EQ(first.schedule(), p.schedule());
  EXPECT_EQ(first.partition(), p.partition());
  EXPECT_NE(first.plan().find("profiled the layers here"), std::string::npos) << first.plan();
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(cache.path()), {}), 1) << "one profile, cached";
}

TEST(PipelineRun, ADeadStageStopsTheOthersNamingIt) {
  Cluster c(3, with(kPipelineData, {"--algo", "pipeline", "--stages", "3", "--micro-batches", "4", "--quiet",
                                    "--epochs", "1000", "--timeout-ms", "2000", "--heartbeat-ms", "100",
                                    "--failure-timeout-ms", "1500"}));
  wait_for_rounds(c, 2);
  c.proc(1).signal(SIGKILL);
  // The step's timeout, then at most the failure timeout for membership to drop it.
  expect_stopped_naming(c, {0, 2}, 15s, "pipeline stage 'w1' is gone");
}

// Killed mid-run and restarted with the same command lines (--partition
// auto: the partition comes from the checkpoints), the stages go on from
// their own checkpoints (stage 1's newest removed: stage 0 goes back to its
// round) and end where a run never stopped ends, bit for bit. Another
// partition's checkpoints are refused in one line.
TEST(PipelineRun, ResumesFromItsCheckpointsAsIfNeverStopped) {
  const std::vector<std::string> flags{
      "--train-limit", "2400", "--test-limit",    "200", "--batch", "8",
      "--threads",     "1",    "--epochs",        "1",   "--algo",  "pipeline",
      "--stages",      "2",    "--micro-batches", "4",   "--quiet", "--timeout-ms",
      "10000"};
  Cluster whole(2, flags);
  const std::string never_stopped = expect_identical_cells(whole, 120s).hash;

  TempDir dir("gossipd_pipeline_ckpt");
  const auto ckpt = [&](int i) { return dir.file(Cluster::id(i) + ".ckpt"); };
  Cluster c(2, with(flags, {"--checkpoint-every", "20", "--checkpoint-keep", "3"}), [&](int i) {
    return std::vector<std::string>{"--checkpoint-dir", ckpt(i)};
  });
  ASSERT_TRUE(wait_until([&] { return newest_round(ckpt(0)) >= 40 && newest_round(ckpt(1)) >= 40; }, 60s));
  for (int i = 0; i < 2; ++i) c.proc(i).signal(SIGKILL);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(c.proc(i).wait(60s));
  ASSERT_LT(newest_round(ckpt(0)), 300u) << "the run ended before the kill";
  // Stage 1 ends its part of a step first, so it may have saved a round
  // stage 0 has not: those go too, with its newest, and stage 0 goes back.
  do {
    std::filesystem::remove(daemon::list_checkpoints(ckpt(1)).at(0));
  } while (newest_round(ckpt(1)) >= newest_round(ckpt(0)));
  const uint64_t back_to = newest_round(ckpt(1));
  ASSERT_GT(back_to, 0u);

  std::vector<int> again{c.restart(0), c.restart(1)};
  const Done resumed = expect_identical_cells(c, 120s, again);
  EXPECT_EQ(resumed.rounds, 300);
  EXPECT_EQ(resumed.hash, never_stopped) << "resumed at round " << back_to;
  EXPECT_NE(c.proc(again[0]).out().find("goes back to its checkpoint of round " + std::to_string(back_to)),
            std::string::npos)
      << c.proc(again[0]).out();

  const std::string layout =
      daemon::read_checkpoint(daemon::list_checkpoints(ckpt(0)).at(0)).state.header.layout();
  const std::string another = layout.ends_with("partition 1,4") ? "2,3" : "1,4";
  const RunResult other =
      run(with({bin("gossipd"), "run", "--id", "w0", "--listen", "tcp://127.0.0.1:0", "--peers",
                "w1=tcp://127.0.0.1:9", "--checkpoint-dir", ckpt(0), "--check-config"},
               with(flags, {"--partition", another})),
          60s);
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_EQ(std::count(other.err.begin(), other.err.end(), '\n'), 1) << other.err;
  EXPECT_NE(other.err.find(", this worker is pipeline 2x1 stage 0 (replica 0), partition " + another +
                           ": restart with the flags that place it"),
            std::string::npos)
      << other.err;
}

TEST(PipelineRun, ShapesThatDoNotFitAreOneLineAndExitTwo) {
  expect_refused_by(2, {"--algo", "pipeline", "--stages", "11", "--model", "cnn"},
                    "--stages 11 is more than the model's 10 layers");
  expect_refused_by(2, {"--algo", "pipeline", "--stages", "2", "--batch", "30", "--micro-batches", "4"},
                    "--micro-batches 4 does not divide --batch 30");
  expect_refused_by(2, {"--algo", "pipeline", "--stages", "2", "--partition", "2,2"},
                    "--partition 2,2: '2,2' covers 4 layers, the model has 5");
  expect_refused_by(2, {"--algo", "pipeline", "--stages", "2", "--partition", "2,a"},
                    "is not a list of layer counts");
  expect_refused_by(2, {"--algo", "pipeline", "--stages", "2", "--partition", "/nonexistent/plan.json"},
                    "--partition /nonexistent/plan.json: cannot read it");
  expect_refused_by(3, {"--algo", "pipeline", "--stages", "2", "--replicas", "2"},
                    "--stages 2 x --replicas 2 is 4 processes, the cluster has 3 members");
  expect_refused_by(2, {"--algo", "pipeline", "--partition", "2,3"},
                    "--partition 2,3 fixes 2 stages: give --stages 2 with it");
  expect_refused_by(2, {"--algo", "pipeline", "--stages", "3"},
                    "--stages 3 does not divide the cluster's 2 members");
  expect_refused_by(2, {"--algo", "pipeline", "--replicas", "2", "--batch", "31"},
                    "--replicas 2 does not divide --batch 31");
  expect_refused_by(7, {"--algo", "pipeline"},
                    "no pipeline plan of 7 processes fits --batch 64 and the model's 5 layers");
  expect_refused_by(2, {"--algo", "pipeline", "--micro-batches", "none"},
                    "--micro-batches none: give a count of at least 1, or auto");
  expect_refused_by(2, {"--algo", "allreduce", "--stages", "2"}, "--stages is for --algo pipeline");
  expect_refused_by(
      2, {"--algo", "pipeline", "--stages", "2", "--schedule", "1f1b-async", "--checkpoint-dir", "/tmp"},
      "--schedule 1f1b-async keeps micro-batches in flight");
}

}  // namespace
}  // namespace gossipd::testing
