#include "daemon/worker/sync_start.h"

#include <algorithm>
#include <utility>

#include "protocol/collectives/barrier.h"

namespace gossipd::daemon {

SyncWorker::SyncWorker(WorkerContext& c, std::string what, std::string restart)
    : node_(c.node),
      members_(c.members),
      membership_(c.membership),
      state_(c.state),
      trainer_(c.trainer()),
      loop_(c.loop()),
      options_(c.options),
      steps_per_epoch_(c.steps_per_epoch),
      checkpointer_(c.checkpointer),
      header_(c.snapshot_header),
      gone_{c.membership, members_, c.node.id(), std::move(what), std::move(restart), gone_wait(c.options)} {
  // Each process holds a share: a resume needs a round every process saved.
  if (checkpointer_) checkpointer_->wait_instead_of_skipping();
}

size_t rank_of(const WorkerContext& c) {
  return static_cast<size_t>(std::find(c.members.begin(), c.members.end(), c.node.id()) - c.members.begin());
}

protocol::CollectiveOptions step_options(const RunOptions& o) {
  protocol::CollectiveOptions c;
  c.timeout = std::chrono::milliseconds(o.timeout_ms);
  return c;
}

std::unique_ptr<protocol::Group> every_member_up(protocol::Node& node, uint32_t tag,
                                                 const std::vector<std::string>& members, const RunOptions& o,
                                                 std::stop_token stop) {
  protocol::CollectiveOptions start = step_options(o);
  start.timeout = std::chrono::milliseconds(o.startup_timeout_ms);
  start.stop = stop;
  auto all = std::make_unique<protocol::Group>(node, tag, members, start);
  protocol::Barrier(*all).run();
  return all;
}

}  // namespace gossipd::daemon
