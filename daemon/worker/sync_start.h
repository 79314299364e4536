#pragma once

#include <cstddef>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/config/run_options.h"
#include "daemon/worker/gone_member.h"
#include "daemon/worker/worker.h"
#include "protocol/collectives/group.h"

namespace gossipd::daemon {

// What the workers of the modes that spread one replica over processes
// (grid, pipeline) share.

// What such a worker keeps of its WorkerContext (which lives only while the
// worker is made), and how it names a member gone: `what` ("grid cell"),
// `restart` (what to do then).
class SyncWorker : public Worker {
 protected:
  SyncWorker(WorkerContext& c, std::string what, std::string restart);

  protocol::Node& node_;
  std::vector<std::string> members_;
  Membership& membership_;
  WorkerState& state_;
  trainer::Trainer& trainer_;
  TrainingLoop& loop_;
  const RunOptions& options_;
  size_t steps_per_epoch_;
  Checkpointer* checkpointer_;
  proto::StateHeader header_;  // the schedule, the mode and this process's layout
  std::vector<float> x_;       // a step's samples and labels
  std::vector<uint8_t> y_;
  GoneMember gone_;  // names a member gone when a step fails
};

// This process's rank: its place among the initial members (sorted ids).
size_t rank_of(const WorkerContext& c);

// A step's collectives: a peer silent for --timeout-ms fails it.
protocol::CollectiveOptions step_options(const RunOptions& o);

// Every member on `tag`, waited for up to --startup-timeout-ms (a barrier:
// every process is up before the first step); `stop` aborts the wait.
std::unique_ptr<protocol::Group> every_member_up(protocol::Node& node, uint32_t tag,
                                                 const std::vector<std::string>& members, const RunOptions& o,
                                                 std::stop_token stop);

}  // namespace gossipd::daemon
