#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "daemon/cluster/membership.h"
#include "daemon/cluster/status_delegate.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/worker_state.h"
#include "protocol/transport/inproc_transport.h"
#include "protocol/transport/node.h"

namespace gossipd::daemon {

// N members of the real membership code (Node, Validator, Membership) in
// this process, on the in-process transport: each with its membership
// threads, as in N daemons, but nothing trains. What a member receives is
// validated and filed in its mailbox on the sender's thread (the hub's
// sink), not by a receive thread of its own: a thousand receive threads
// woke 20,000 times a second to poll and once more for every message, the
// bench's largest cost. The membership bench and the membership tests run
// clusters of them.
class InProcCluster {
 public:
  // Member i's entry and the peers it starts knowing, before its Membership
  // is made: a test makes a member one that joined (since_round > 0) or
  // leaves a peer out of its table.
  using Shape = std::function<void(size_t i, proto::Member& self, std::map<std::string, std::string>& peers)>;

  // Members "m0" .. "m<n-1>", every one knowing every other from the start
  // (unless `shape` says otherwise).
  InProcCluster(size_t n, const MembershipOptions& options, const Shape& shape = {});
  ~InProcCluster();

  size_t size() const { return members_.size(); }
  static std::string id(size_t i) { return "m" + std::to_string(i); }
  void arm_all();
  // Gone without a word (its threads stopped, its endpoint unbound): a SIGKILL.
  void kill(size_t i);
  bool alive(size_t i) const { return members_[i] != nullptr; }
  Membership& membership(size_t i) { return *members_[i]->membership; }
  // Whether every live member's view lists `id` / lacks it.
  bool listed_everywhere(const std::string& id) const;
  bool dropped_everywhere(const std::string& id) const;
  // Waits (on each member's change signal) until every live member has
  // dropped `id`; false at `deadline`.
  bool wait_dropped(const std::string& id, std::chrono::steady_clock::time_point deadline);
  // Member i's counter (gossipd_members_evicted_total, ...); 0 when it never counted.
  double counter(size_t i, const std::string& name) const;
  // Member i's gauge (gossipd_member_local_health, ...); 0 when it never set it.
  double gauge(size_t i, const std::string& name) const;
  protocol::InProcHub::Sent sent(size_t i) const { return hub_.sent_by(id(i)); }
  // Why member i called on_lost ("" while it did not).
  std::string lost(size_t i) const;
  // The transport they share: tests deliver messages of their own through it.
  protocol::InProcHub& hub() { return hub_; }
  // A PING (number `seq`) as member `from` would send it, for a test to
  // add updates to and deliver.
  static proto::Envelope ping_from(const std::string& from, uint64_t seq);
  // `env` handed to member i as if its sender sent it; false when member i
  // does not listen.
  bool deliver(size_t i, const proto::Envelope& env);

 private:
  struct Member {
    WorkerState state;
    StatusDelegate delegate{state};
    MetricsRegistry metrics;
    std::unique_ptr<protocol::Node> node;
    std::unique_ptr<Membership> membership;
    std::shared_ptr<std::string> lost = std::make_shared<std::string>();
  };
  protocol::InProcHub hub_;
  std::vector<std::unique_ptr<Member>> members_;
  mutable std::mutex lost_mu_;
};

}  // namespace gossipd::daemon
