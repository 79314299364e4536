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
// SGD between groups, with no lockstep between them. Each exchange round of
// a member (its own count, from 1), for every segment s it owns in its group,
// a derangement over the groups (topology::inter_group_exchange, keyed by
// seed, view, round, segment) names the owner of s in another group it sends
// its copy to. The sends run on a thread of their own, on snapshots the
// training thread offers (only when the thread is idle). Receiving is not
// paired by round: take() collects, without waiting, whatever the members of
// the other groups sent since the last take, whichever of their rounds it
// belongs to, and keeps the newest copy per segment (by the sender's step),
// so a group that runs ahead still gets a slow group's latest model and the
// slow one gets the fast one's latest, not a backlog. The training thread
// never waits.
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
  // The copies that arrived since the last take, the newest per segment
  // (mis-sized ones dropped and counted as rejects).
  std::vector<FoldIn> take();
  // Since construction: sends, skipped sends (the peer's queue stayed full
  // past the segment deadline), copies received, and copies superseded by a
  // newer one before they were taken.
  RoundStats stats() const;
  uint64_t rounds() const;
  uint64_t superseded() const;

  static constexpr uint32_t kTag = tags::first(tags::User::kComputeGroups);

 private:
  struct Job {
    topology::View view;
    std::map<std::string, std::string> labels;
    uint64_t step = 0;
    std::vector<std::pair<uint32_t, std::vector<float>>> owned;  // segment, its copy
  };
  void loop(std::stop_token stop);
  void run_round(const Job& job, uint64_t round);
  // A received copy, if it is one of this member's segments, whole.
  std::optional<FoldIn> accept(const Message& m, const std::vector<uint32_t>& owned);

  Node& node_;
  SegmentTable segments_;
  GossipOptions options_;
  topology::GroupSpread spread_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::optional<Job> job_;            // offered, not yet taken up by the thread
  bool busy_ = false;                 // a job offered or running
  std::vector<std::string> senders_;  // the other groups' members, in the view last offered
  std::vector<uint32_t> owned_;       // the segments this member owned then
  RoundStats stats_;
  uint64_t rounds_ = 0;
  uint64_t superseded_ = 0;
  std::jthread thread_;  // last: stops before the members it uses
};

}  // namespace gossipd::protocol
