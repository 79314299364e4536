#pragma once

#include "daemon/cluster/membership_delegate.h"
#include "daemon/observe/worker_state.h"

namespace gossipd::daemon {

// Membership's delegate over a member's /status (WorkerState): the pace it
// reports, and every published view written into it (members, view id,
// view changes) with this member's group label.
class StatusDelegate : public MembershipDelegate {
 public:
  explicit StatusDelegate(WorkerState& state) : state_(state) {}
  double rounds_per_second() const override;
  void view_published(const topology::View& view, uint32_t view_changes) override;
  void group_taken(const std::string& label) override;

 private:
  WorkerState& state_;
};

}  // namespace gossipd::daemon
