// Checkpoint files: written atomically and read back whole; a truncated,
// corrupt or foreign file is refused with its reason and the previous one is
// used; only the newest K are kept; the background writer never loses one.
#include "daemon/cluster/checkpoint.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/captured_log.h"
#include "tests/support/temp_dir.h"

namespace gossipd::daemon {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

ReplicaState state_at(uint64_t round, size_t params = 1000, size_t optimizer = 1000) {
  ReplicaState st;
  st.header.set_step(round);
  st.header.set_algo("sgp");
  st.header.set_steps_per_epoch(50);
  st.header.add_push_sum_weights(0.25);
  for (size_t i = 0; i < params; ++i)
    st.params.push_back(static_cast<float>(round) + 0.001f * static_cast<float>(i));
  for (size_t i = 0; i < optimizer; ++i) st.optimizer.push_back(-static_cast<float>(i));
  seal(st);
  return st;
}

Checkpoint checkpoint_at(uint64_t round) {
  Checkpoint c;
  c.state = state_at(round);
  c.node_id = "w3";
  c.test_accuracy = 0.8125;
  auto* m = c.view.add_members();
  m->set_id("w1");
  m->set_endpoint("tcp://127.0.0.1:7001");
  return c;
}

void overwrite_byte(const fs::path& p, std::streamoff at) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(at);
  char b = 0;
  f.read(&b, 1);
  f.seekp(at);
  b = static_cast<char>(b ^ 0x40);
  f.write(&b, 1);
}

TEST(Checkpoint, ReadsBackWhatWasWritten) {
  TempDir dir("gossipd_ckpt");
  const Checkpoint c = checkpoint_at(1200);
  const fs::path p = write_checkpoint(dir.path(), c, 3);
  EXPECT_EQ(p.filename(), "ckpt-000000001200.gsck");
  const Checkpoint back = read_checkpoint(p);
  EXPECT_EQ(back.state.params, c.state.params);
  EXPECT_EQ(back.state.optimizer, c.state.optimizer);
  EXPECT_EQ(back.state.header.step(), 1200u);
  EXPECT_EQ(back.state.header.algo(), "sgp");
  EXPECT_EQ(back.state.header.push_sum_weights(0), 0.25);
  EXPECT_EQ(back.node_id, "w3");
  EXPECT_EQ(back.test_accuracy, 0.8125);
  ASSERT_EQ(back.view.members_size(), 1);
  EXPECT_EQ(back.view.members(0).endpoint(), "tcp://127.0.0.1:7001");
  // No temporary file is left behind.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);
}

TEST(Checkpoint, KeepsOnlyTheNewestK) {
  TempDir dir("gossipd_ckpt");
  for (uint64_t r : {100, 200, 300, 400, 500}) write_checkpoint(dir.path(), checkpoint_at(r), 2);
  const auto all = list_checkpoints(dir.path());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].filename(), "ckpt-000000000500.gsck");
  EXPECT_EQ(all[1].filename(), "ckpt-000000000400.gsck");
}

TEST(Checkpoint, EveryDamagedFileIsRefusedWithItsReason) {
  TempDir dir("gossipd_ckpt");
  const fs::path p = write_checkpoint(dir.path(), checkpoint_at(10), 3);
  const auto size = fs::file_size(p);
  struct Case {
    std::string name;
    std::function<void(const fs::path&)> damage;
    std::string reason;
  };
  const std::vector<Case> cases{
      {"truncated payload", [&](const fs::path& f) { fs::resize_file(f, size - 100); }, "truncated"},
      {"truncated header", [&](const fs::path& f) { fs::resize_file(f, 30); }, "truncated"},
      {"padded", [&](const fs::path& f) { fs::resize_file(f, size + 8); }, "padded"},
      {"flipped payload bit",
       [&](const fs::path& f) { overwrite_byte(f, static_cast<std::streamoff>(size) - 50); }, "CRC-32"},
      {"flipped header length", [&](const fs::path& f) { overwrite_byte(f, 10); }, "truncated"},
      {"empty", [&](const fs::path& f) { fs::resize_file(f, 0); }, "not a gossipd checkpoint"},
      {"another file", [&](const fs::path& f) { std::ofstream(f, std::ios::trunc) << "{\"epoch\":3}\n"; },
       "not a gossipd checkpoint"},
  };
  for (const auto& c : cases) {
    const fs::path copy = fs::path(dir.path()) / ("damaged-" + std::to_string(&c - cases.data()));
    fs::copy_file(p, copy);
    c.damage(copy);
    try {
      read_checkpoint(copy);
      ADD_FAILURE() << c.name << ": read without error";
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(c.reason), std::string::npos) << c.name << ": " << e.what();
    }
  }
}

TEST(Checkpoint, ANewestFileThatIsDamagedFallsBackToThePreviousOne) {
  TempDir dir("gossipd_ckpt");
  write_checkpoint(dir.path(), checkpoint_at(100), 3);
  write_checkpoint(dir.path(), checkpoint_at(200), 3);
  const fs::path newest = write_checkpoint(dir.path(), checkpoint_at(300), 3);
  fs::resize_file(newest, fs::file_size(newest) / 2);  // a crash mid-copy, say
  std::vector<std::string> skipped;
  const auto c = load_newest_checkpoint(dir.path(), [&](const std::string& s) { skipped.push_back(s); });
  ASSERT_TRUE(c);
  EXPECT_EQ(c->state.header.step(), 200u);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("ckpt-000000000300.gsck"), std::string::npos) << skipped[0];
  EXPECT_TRUE(fs::exists(newest)) << "the damaged file is left for the operator";
  // Nothing usable: none.
  TempDir empty("gossipd_ckpt");
  EXPECT_FALSE(load_newest_checkpoint(empty.path(), [](const std::string&) {}));
}

TEST(Checkpointer, WritesEveryNRoundsInTheBackgroundAndTheFinalOneOnRequest) {
  TempDir dir("gossipd_ckpt");
  CheckpointOptions o;
  o.dir = dir.path();
  o.every = 10;
  o.keep = 100;
  {
    Checkpointer writer(o, "w0", [](Checkpoint& c) { c.test_accuracy = 0.5; });
    int captures = 0;
    for (uint64_t round = 0; round <= 35; ++round) {
      writer.at_step(round, [&] {
        ++captures;
        return state_at(round, 100, 0);
      });
    }
    // Rounds 10, 20 and 30 are due: each is captured, or skipped (counted)
    // because the previous write was still in progress; this loop has no
    // training in it, so skips are expected here.
    EXPECT_EQ(static_cast<uint64_t>(captures) + writer.skipped(), 3u);
    writer.write_now(state_at(36, 100, 0));  // the final one always is written
    EXPECT_EQ(writer.written(), static_cast<uint64_t>(captures) + 1) << "skipped " << writer.skipped();
  }
  const auto all = list_checkpoints(dir.path());
  ASSERT_GE(all.size(), 1u);
  EXPECT_EQ(all[0].filename(), "ckpt-000000000036.gsck");
  const Checkpoint last = read_checkpoint(all[0]);
  EXPECT_EQ(last.node_id, "w0");
  EXPECT_EQ(last.test_accuracy, 0.5);
}

// The grid's and pipeline's processes hold shares and resume from a round
// every one of them saved: there no due checkpoint is skipped, however fast
// the rounds come (this loop has no training in it).
TEST(Checkpointer, WaitingInsteadOfSkippingWritesEveryDueRound) {
  TempDir dir("gossipd_ckpt");
  CheckpointOptions o;
  o.dir = dir.path();
  o.every = 10;
  o.keep = 100;
  {
    Checkpointer writer(o, "w0", {});
    writer.wait_instead_of_skipping();
    for (uint64_t round = 0; round <= 55; ++round)
      writer.at_step(round, [&] { return state_at(round, 100000, 0); });
    EXPECT_EQ(writer.skipped(), 0u);
  }
  std::vector<std::string> names;
  for (const auto& f : list_checkpoints(dir.path())) names.push_back(f.filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"ckpt-000000000050.gsck", "ckpt-000000000040.gsck",
                                             "ckpt-000000000030.gsck", "ckpt-000000000020.gsck",
                                             "ckpt-000000000010.gsck"}));
}

using gossipd::testing::CapturedLog;

TEST(Checkpointer, AnUnwritableDirectoryIsReportedAndTrainingGoesOn) {
  CheckpointOptions o;
  o.dir = "/nonexistent/gossipd/checkpoints";
  o.every = 1;
  Checkpointer writer(o, "w0", {});
  CapturedLog log;
  writer.write_now(state_at(1, 10, 0));  // does not throw: training goes on
  EXPECT_EQ(writer.written(), 0u);
  const std::string said = log.text();
  EXPECT_NE(said.find("/nonexistent/gossipd/checkpoints"), std::string::npos) << said;
  EXPECT_NE(said.find("training goes on"), std::string::npos) << said;
}

}  // namespace
}  // namespace gossipd::daemon
