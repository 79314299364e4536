#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "protocol/crossover.h"
#include "protocol/node.h"
#include "protocol/segment_table.h"
#include "protocol/tags.h"
#include "topology/groups.h"
#include "topology/view.h"

namespace gossipd::protocol {

// A segment that arrived from another compute group.
struct FoldIn {
  uint32_t segment = 0;
  std::vector<float> values;  // the sender's copy of the segment
  uint64_t sender_step = 0;   // the sender's training step when it took the copy
};

// The asynchronous exchange between compute groups (--algo groups): Crossover-
// SGD between groups, run on a thread of its own on snapshots the training
// thread offers. Each exchange round, for every segment s, a derangement over
// the groups (topology::inter_group_exchange, keyed by seed, view, round,
// segment) names where the owner of s in this group sends its copy and whose
// copy it receives; the newest copy received per segment waits until the
// training thread takes it. The training thread never waits: offer() hands
// over a snapshot only when the thread is idle, take() returns what is there.
// A round waits for its senders up to the segment deadline, on its own
// thread; a copy that misses it is counted as skipped, and if it comes later
// it is dropped as stale. Exchange rounds are numbered from 1 on every member,
// so members meet in the round they share however far their steps differ.
class AsyncGroupExchange {
 public:
  AsyncGroupExchange(Node& node, SegmentTable segments, GossipOptions options,
                     topology::GroupSpread spread = topology::GroupSpread::kSpread);
  ~AsyncGroupExchange();  // stops the thread, and the round it is in
  AsyncGroupExchange(const AsyncGroupExchange&) = delete;
  AsyncGroupExchange& operator=(const AsyncGroupExchange&) = delete;

  // Starts an exchange round on the segments this member owns in its group
  // of `view` (copied at `step`) when the thread is idle and there is
  // another group; false otherwise.
  bool offer(const topology::View& view, const std::map<std::string, std::string>& labels, uint64_t step,
             std::span<const float> params);
  // The copies that arrived since the last take, the newest per segment.
  std::vector<FoldIn> take();
  // Since construction.
  RoundStats stats() const;
  uint64_t rounds() const;

  static constexpr uint32_t kTag = tags::first(tags::User::kComputeGroups);

 private:
  struct Job {
    topology::View view;
    std::map<std::string, std::string> labels;
    uint64_t step = 0;
    std::vector<std::pair<uint32_t, std::vector<float>>> owned;  // segment, its copy
  };
  void loop(std::stop_token stop);
  void run_round(const Job& job, uint64_t round, std::stop_token stop);

  Node& node_;
  SegmentTable segments_;
  GossipOptions options_;
  topology::GroupSpread spread_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::optional<Job> job_;  // offered, not yet taken up by the thread
  bool busy_ = false;       // a job offered or running
  std::map<uint32_t, FoldIn> arrived_;
  RoundStats stats_;
  uint64_t rounds_ = 0;
  std::jthread thread_;  // last: stops before the members it uses
};

}  // namespace gossipd::protocol
