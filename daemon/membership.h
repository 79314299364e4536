#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/metrics.h"
#include "daemon/worker_state.h"
#include "protocol/node.h"
#include "topology/view.h"

namespace gossipd::daemon {

struct MembershipOptions {
  std::chrono::milliseconds heartbeat_interval{200};
  // A member heard from neither by heartbeat nor otherwise for this long is evicted.
  std::chrono::milliseconds failure_timeout{3000};
};

// The live view of a cluster that starts from a static member list: sends
// heartbeats to every member, evicts one that stays silent past the failure
// timeout, and drops one at once when it says LEAVE. Every member starts
// from the same list and only removes, so members that agree on who is gone
// agree on the view (the epoch counts the departures). Joining comes later.
class Membership {
 public:
  Membership(protocol::Node& node, const std::map<std::string, std::string>& peers, MembershipOptions options,
             WorkerState& state, MetricsRegistry& metrics);
  ~Membership();
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // The current view (this node included).
  topology::View view() const;
  // Starts failure detection, counting silence from now. Call it once every
  // member is known to be up (after the start-up barrier): before that a
  // slow starter would be evicted for still loading its data.
  void arm();
  // Tells every member this node is leaving (SIGTERM), then stops.
  void leave();

 private:
  void loop(std::stop_token stop);
  void drop(const std::string& id, const char* why);
  void publish();

  protocol::Node& node_;
  MembershipOptions options_;
  WorkerState& state_;
  Gauge& members_gauge_;
  Counter& evictions_;
  mutable std::mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_heard_;  // peers only
  uint32_t epoch_ = 0;
  bool armed_ = false;
  std::jthread thread_;
};

}  // namespace gossipd::daemon
