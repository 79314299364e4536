#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "daemon/modes/groups/groups_status.pb.h"
#include "daemon/modes/groups/shard_client.h"
#include "daemon/modes/groups/shard_store.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/worker_state.h"
#include "protocol/collectives/group.h"

namespace gossipd::daemon {

struct GroupsReportInfo {
  size_t groups = 0;  // g, as started
  std::string label;  // this member's group's
  bool momentum_auto = false;
};

// What a compute-groups member shows after every step: its group, and as an
// owner the pushes it applied and refused, their staleness (histogram and
// mean), the shards it seeded, the updates lost, the momentum in use and the
// one its shards' updates show (/status "groups", /metrics).
class GroupsReport {
 public:
  GroupsReport(const protocol::Node& node, WorkerState& state, MetricsRegistry& metrics,
               const ShardStore& store, const ShardClient& client, GroupsReportInfo info);
  void at_step(const protocol::Group& ring, size_t groups_in_view);
  // Once more at the end: what this member applied as an owner after its
  // own last step, while the other groups finished.
  void at_end() { publish(); }

 private:
  const protocol::Node& node_;
  WorkerState& state_;
  const ShardStore& store_;
  void publish();
  void fill(proto::GroupsStatus& status, const ShardStats& stats) const;

  const ShardClient& client_;
  GroupsReportInfo info_;
  std::vector<std::string> ring_;  // at the last step
  size_t groups_in_view_ = 0;
  Gauge& applied_;
  Gauge& refused_;
  Gauge& staleness_mean_;
  std::vector<Gauge*> staleness_;  // per bucket
};

}  // namespace gossipd::daemon
