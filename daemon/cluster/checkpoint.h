#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "daemon/cluster/state_transfer.h"
#include "proto/gossip.pb.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {

// A worker's own state on disk: what a join would download (parameters — for
// SGP the push-sum numerators —, optimizer state, step, schedule, SGP
// weights) plus the view it knew and its id.
struct Checkpoint {
  ReplicaState state;
  proto::MemberList view;
  std::string node_id;
  double test_accuracy = 0;
};

// A checkpoint file that cannot be used: truncated, corrupt, not one at all.
class CheckpointError : public protocol::Error {
 public:
  using protocol::Error::Error;
};

// File name of the checkpoint of `round`: ckpt-000000001234.gsck (names sort by round).
std::string checkpoint_name(uint64_t round);

// Writes atomically: a temporary file in `dir`, fsync, rename, fsync of the
// directory; then removes all but the newest `keep` checkpoints. Returns the
// path. Throws std::runtime_error naming the file and the errno text.
std::filesystem::path write_checkpoint(const std::filesystem::path& dir, const Checkpoint& checkpoint,
                                       int keep);

// Reads and verifies one file (magic, sizes, CRC-32); throws CheckpointError.
Checkpoint read_checkpoint(const std::filesystem::path& path);

// The checkpoint files in `dir`, newest first.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& dir);

// The newest checkpoint that reads back whole; every newer one that does not
// is reported through `skipped` ("FILE: reason") and left on disk.
std::optional<Checkpoint> load_newest_checkpoint(const std::filesystem::path& dir,
                                                 const std::function<void(const std::string&)>& skipped);

struct CheckpointOptions {
  std::string dir;     // empty = no checkpoints
  uint64_t every = 0;  // rounds between two checkpoints; 0 = only the final one
  int keep = 3;
};

// Writes a worker's checkpoints in the background: the worker hands over a
// copy between two steps and goes on; a write still in progress when the next
// one is due makes that one skipped (and logged), never a stalled round --
// unless wait_instead_of_skipping() was called: a process that holds a share
// of the model (grid, pipeline) resumes only from a round every process has a
// checkpoint of, so there a due checkpoint waits for the previous write.
class Checkpointer {
 public:
  // `describe` fills in what the worker does not know (view, last accuracy).
  Checkpointer(CheckpointOptions options, std::string node_id, std::function<void(Checkpoint&)> describe);
  ~Checkpointer();  // finishes the write in progress
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Between two steps: every `every` rounds, `capture` is called and its
  // state written.
  void at_step(uint64_t round, const std::function<ReplicaState()>& capture);
  // Writes now and waits for it (the end of training).
  void write_now(ReplicaState state);
  // From now on at_step waits for a write in progress instead of skipping
  // the due checkpoint (call before the first step).
  void wait_instead_of_skipping() { wait_ = true; }

  uint64_t written() const { return written_.load(); }
  uint64_t skipped() const { return skipped_.load(); }

 private:
  Checkpoint complete(ReplicaState state);
  void write(const Checkpoint& c);
  // Writes with the lock released, busy meanwhile; `lock` is held again after.
  void write_unlocked(std::unique_lock<std::mutex>& lock, const Checkpoint& c);
  void loop();

  CheckpointOptions options_;
  std::string node_id_;
  std::function<void(Checkpoint&)> describe_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<Checkpoint> pending_;
  bool busy_ = false;
  bool stopping_ = false;
  bool wait_ = false;  // set before the first step, read by the training thread only
  std::atomic<uint64_t> written_{0};
  std::atomic<uint64_t> skipped_{0};
  std::thread thread_;
};

}  // namespace gossipd::daemon
