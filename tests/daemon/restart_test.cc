// Kill and restart from checkpoints: a whole cluster SIGKILLed and started
// again with the same command lines goes on from its checkpoints (a damaged
// newest one is reported and the previous one used); a single member killed
// and restarted with --join rejoins, its round never going back.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "daemon/cluster/checkpoint.h"
#include "tests/support/cluster.h"
#include "tests/support/http_client.h"
#include "tests/support/records.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

uint64_t newest_round(const std::string& dir) {
  const auto all = daemon::list_checkpoints(dir);
  return all.empty() ? 0 : daemon::read_checkpoint(all[0]).state.header.step();
}

// "groups": compute groups of one member each (3 groups of 3 workers), so
// each group's checkpoints are its only member's.
std::vector<std::string> args_for(const std::string& param) {
  const bool groups = param == "groups";
  std::vector<std::string> args{"--algo",   groups ? "groups" : param,
                                "--epochs", "1000",
                                "--quiet",  "--threads",
                                "1",        "--train-limit",
                                "6000",     "--test-limit",
                                "1000",     "--batch",
                                "32",       "--heartbeat-ms",
                                "100",      "--failure-timeout-ms",
                                "1500",     "--segment-deadline-ms",
                                "1000",     "--checkpoint-every",
                                "25",       "--checkpoint-keep",
                                "3"};
  if (groups) args.insert(args.end(), {"--compute-groups", "3"});
  return args;
}

class WholeClusterRestart : public ::testing::TestWithParam<std::string> {};

TEST_P(WholeClusterRestart, GoesOnFromTheCheckpointsNotFromZero) {
  TempDir dir("gossipd_restart");
  constexpr int n = 3;
  Cluster c(n, args_for(GetParam()), [&](int i) {
    return std::vector<std::string>{"--metrics-out", dir.file(Cluster::id(i) + ".jsonl"), "--checkpoint-dir",
                                    dir.file(Cluster::id(i) + ".ckpt")};
  });
  // Three epochs in (62 steps each: 6000 samples / 3 workers / batch 32).
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(
        wait_until([&] { return read_records(dir.file(Cluster::id(i) + ".jsonl")).size() >= 3; }, 90s))
        << "worker " << i << ": " << c.proc(i).err();
  }
  for (int i = 0; i < n; ++i) c.proc(i).signal(SIGKILL);
  for (int i = 0; i < n; ++i) ASSERT_TRUE(c.proc(i).wait(60s));
  double before = 0;
  std::vector<size_t> lines(n);
  std::vector<uint64_t> saved(n);
  for (int i = 0; i < n; ++i) {
    const auto recs = read_records(dir.file(Cluster::id(i) + ".jsonl"));
    lines[i] = recs.size();
    before += recs.back().test_accuracy() / n;
    saved[i] = newest_round(dir.file(Cluster::id(i) + ".ckpt"));
    ASSERT_GE(saved[i], 150u) << "worker " << i << " has no checkpoint from the third epoch";
  }
  // w1's newest checkpoint is cut short (as by a disk filling up): it must
  // say so and take the one before.
  const auto w1 = daemon::list_checkpoints(dir.file("w1.ckpt"));
  ASSERT_GE(w1.size(), 2u);
  fs::resize_file(w1[0], fs::file_size(w1[0]) / 2);
  saved[1] = daemon::read_checkpoint(w1[1]).state.header.step();

  std::vector<int> again;
  for (int i = 0; i < n; ++i) again.push_back(c.restart(i));
  const uint64_t oldest = *std::min_element(saved.begin(), saved.end());
  for (int i = 0; i < n; ++i) {
    const int p = again[i];
    const std::string want = "resumes from its checkpoint of round " + std::to_string(saved[i]);
    ASSERT_TRUE(wait_until([&] { return c.proc(p).out().find(want) != std::string::npos; }, 60s))
        << "worker " << i << ": " << c.proc(p).out() << c.proc(p).err();
    const uint16_t port = c.http_port(p);
    ASSERT_GT(port, 0);
    uint64_t first = 0;
    ASSERT_TRUE(wait_until([&] { return (first = fetch_status(port).round()) > 0; }, 60s)) << c.proc(p).err();
    EXPECT_GE(first, oldest) << "worker " << i << " went back before the checkpoints";
  }
  const std::string log = c.proc(again[1]).out() + c.proc(again[1]).err();
  EXPECT_TRUE(std::regex_search(
      log, std::regex("ckpt-[0-9]+\\.gsck: truncated or padded: .*; trying the previous one")))
      << log;
  // The first evaluation after the restart continues the epochs and the accuracy.
  double after = 0;
  int epoch_after = 0;
  for (int i = 0; i < n; ++i) {
    const std::string f = dir.file(Cluster::id(i) + ".jsonl");
    ASSERT_TRUE(wait_until([&] { return read_records(f).size() > lines[i]; }, 90s)) << c.proc(again[i]).err();
    const proto::EpochRecord r = read_records(f)[lines[i]];
    after += r.test_accuracy() / n;
    epoch_after = static_cast<int>(r.epoch());
    EXPECT_GE(r.epoch(), 3u) << "worker " << i << " counted its epochs from zero again";
  }
  // The restart must not cost accuracy beyond noise: it goes on from the
  // checkpoint's model. Not asserted for compute groups: every member
  // resumes from the first member's checkpoint, and the owners' velocities
  // are not in a checkpoint, so what "before" means (the mean of three
  // asynchronous one-member groups' models) is not the model they resume
  // from (one run at issue 41's commit: 0.8163 before, 0.8083 after); the
  // rounds and epochs above show where they went on from.
  if (GetParam() != "groups") {
    EXPECT_GE(after, before - 0.03) << "mean accuracy before the kill " << before << ", first after "
                                    << after;
  }
  std::printf(
      "[ measured ] %s: checkpoints at rounds %llu/%llu/%llu (w1's newest cut short), resumed at round >= "
      "%llu; mean test accuracy %.4f before the kill, %.4f at the first evaluation after (epoch %d)\n",
      GetParam().c_str(), static_cast<unsigned long long>(saved[0]),
      static_cast<unsigned long long>(saved[1]), static_cast<unsigned long long>(saved[2]),
      static_cast<unsigned long long>(oldest), before, after, epoch_after);
}

INSTANTIATE_TEST_SUITE_P(Protocols, WholeClusterRestart,
                         ::testing::Values("crossover", "sgp", "allreduce", "groups"));

TEST(MemberRestart, AKilledMemberRestartedWithItsCheckpointsRejoinsWithoutGoingBack) {
  TempDir dir("gossipd_restart");
  constexpr int n = 5;
  auto args = args_for("crossover");
  Cluster c(n, args, [&](int i) {
    return std::vector<std::string>{"--checkpoint-dir", dir.file(Cluster::id(i) + ".ckpt")};
  });
  const std::string w4 = dir.file("w4.ckpt");
  ASSERT_TRUE(wait_until([&] { return newest_round(w4) >= 100; }, 90s)) << c.proc(4).err();
  c.proc(4).signal(SIGKILL);
  ASSERT_TRUE(c.proc(4).wait(60s));
  const uint64_t saved = newest_round(w4);
  const double saved_accuracy = daemon::read_checkpoint(daemon::list_checkpoints(w4).at(0)).test_accuracy;
  args.insert(args.end(), {"--checkpoint-dir", w4});
  const int j = c.join("w4", 0, args);
  const uint16_t port = c.http_port(j);
  ASSERT_GT(port, 0) << c.proc(j).err();
  // From the moment /status says "training" it shows the round the member
  // entered at (past its checkpoint), never 0 until its first round ends.
  uint64_t first = 0;
  ASSERT_TRUE(wait_until(
      [&] {
        const proto::Status s = fetch_status(port);
        first = s.round();
        return s.state() == "training";
      },
      60s))
      << c.proc(j).err();
  EXPECT_GE(first, saved);
  EXPECT_NE(c.proc(j).out().find("left its checkpoint of round " + std::to_string(saved)), std::string::npos)
      << c.proc(j).out();
  // It starts from the cluster's state, newer than its checkpoint: no worse than what it had saved.
  std::smatch m;
  const std::string out = c.proc(j).out();
  ASSERT_TRUE(
      std::regex_search(out, m, std::regex("downloaded the state at round [0-9]+: test accuracy ([0-9.]+)")))
      << out;
  EXPECT_GE(std::stod(m[1]), saved_accuracy - 0.10) << "checkpoint's accuracy " << saved_accuracy;
  // And it checkpoints on from there.
  EXPECT_TRUE(wait_until([&] { return newest_round(w4) > first; }, 60s));
  std::printf(
      "[ measured ] w4's checkpoint at round %llu (test accuracy %.4f); rejoined at round %llu starting "
      "from the cluster's state (test accuracy %s)\n",
      static_cast<unsigned long long>(saved), saved_accuracy, static_cast<unsigned long long>(first),
      m[1].str().c_str());
}

class StoppedMember : public ::testing::TestWithParam<std::string> {};

// SIGTERM stops a member where it is: it writes a checkpoint of its state
// there (AllReduce-SGD's of the last step done; a gossip state is whole
// inside a round too) before it leaves, with no --checkpoint-every due.
TEST_P(StoppedMember, ASigtermedMemberCheckpointsWhereItStopped) {
  TempDir dir("gossipd_restart");
  auto args = args_for(GetParam());
  *(std::find(args.begin(), args.end(), "--checkpoint-every") + 1) = "0";  // only at the end (or a stop)
  Cluster c(2, args, [&](int i) {
    return std::vector<std::string>{"--checkpoint-dir", dir.file(Cluster::id(i) + ".ckpt")};
  });
  const uint16_t port = c.http_port(0);
  ASSERT_GT(port, 0) << c.proc(0).out() << c.proc(0).err();
  uint64_t seen = 0;
  ASSERT_TRUE(wait_until([&] { return (seen = fetch_status(port).round()) >= 20; }, 60s)) << c.proc(0).err();
  ASSERT_TRUE(daemon::list_checkpoints(dir.file("w0.ckpt")).empty()) << "none due before the stop";
  c.proc(0).signal(SIGTERM);
  ASSERT_TRUE(c.proc(0).wait(60s));
  EXPECT_GE(newest_round(dir.file("w0.ckpt")), seen) << c.proc(0).err();
}

INSTANTIATE_TEST_SUITE_P(Protocols, StoppedMember, ::testing::Values("crossover", "sgp", "allreduce"));

TEST(CheckpointFlags, ACheckpointOfAnotherWorkerOrModelIsRefusedInOneLine) {
  TempDir dir("gossipd_restart");
  const std::string ckpt = dir.file("ckpt");
  auto base = std::vector<std::string>{
      bin("gossipd"),  "run", "--algo",       "crossover", "--listen", "ipc://" + dir.file("a.sock"),
      "--train-limit", "640", "--test-limit", "100",       "--epochs", "1",
      "--batch",       "32",  "--quiet"};
  auto with = [&](std::vector<std::string> more, const std::string& where = "") {
    auto a = base;
    a.insert(a.end(), {"--checkpoint-dir", where.empty() ? ckpt : where});
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const auto first = run(with({"--id", "w0"}), 120s);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_FALSE(daemon::list_checkpoints(ckpt).empty()) << "the end of training writes one";
  const auto other_id = run(with({"--id", "w1", "--check-config"}), 60s);
  EXPECT_EQ(other_id.exit_code, 2);
  EXPECT_NE(other_id.err.find("belong to worker 'w0', not 'w1'"), std::string::npos) << other_id.err;
  const auto other_model = run(with({"--id", "w0", "--hidden", "32", "--check-config"}), 60s);
  EXPECT_EQ(other_model.exit_code, 2);
  EXPECT_NE(other_model.err.find("--model, --hidden and --optimizer"), std::string::npos) << other_model.err;
  const auto ok = run(with({"--id", "w0", "--check-config"}), 60s);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("resumes at round 20"), std::string::npos) << ok.out;
  std::ofstream(dir.file("file")) << "x";
  const auto is_file = run(with({"--id", "w0", "--check-config"}, dir.file("file")), 60s);
  EXPECT_EQ(is_file.exit_code, 2);
  EXPECT_NE(is_file.err.find("is a file, not a directory"), std::string::npos) << is_file.err;
}

}  // namespace
}  // namespace gossipd::testing
