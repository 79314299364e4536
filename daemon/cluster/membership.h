#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/cluster/departed_set.h"
#include "daemon/cluster/state_transfer.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/worker_state.h"
#include "protocol/change_signal.h"
#include "protocol/node.h"
#include "topology/view.h"

namespace gossipd::daemon {

struct MembershipOptions {
  std::chrono::milliseconds heartbeat_interval{200};
  // A member heard from neither by heartbeat nor otherwise for this long is evicted.
  std::chrono::milliseconds failure_timeout{3000};
  // A joiner that is ready enters the view this far ahead (converted to
  // rounds at the current rate), so that the announcement reaches every
  // member before the round it names.
  std::chrono::milliseconds admit_ahead{500};
  // A joiner that has not finished its download in this long is forgotten.
  std::chrono::milliseconds join_timeout{60000};
  size_t state_chunk_bytes = 256 << 10;
  // HELLOs from new ids beyond this many joins in progress are dropped (each
  // costs a connection); the joiner retries.
  size_t max_pending_joiners = 8;
  // Most members in the table, this node included: joiners beyond it are
  // refused ("the cluster is full"), entries beyond it in a list ignored.
  size_t max_members = 1024;
};

// What a contact checks before it admits a joiner, and tells it.
struct JoinPolicy {
  // "" to admit; otherwise why not, in one line (sent back to the joiner).
  std::function<std::string(const proto::Hello&)> refuse;
  uint64_t topology_seed = 1;
};

// The live view. Every member keeps a table of members, each with the round
// from which it is in the view (`since_round`: 0 for the members started
// together, the announced round for a joiner); the view for round r is
// every member with since_round <= r. The table spreads by gossip: every
// heartbeat carries it, and a member adopts the entries it lacks (unless it
// saw that incarnation leave). Departures apply at once: a member silent past
// the failure timeout is evicted (not for silence while this member itself
// was paused), one that sends LEAVE is dropped. The view
// epoch is a hash of the (id, since_round) pairs, so members with the same
// table draw the same topology whatever order they learned it in.
//
// Joining (see run_command): a joiner sends HELLO to any member (the
// contact), which replies with the table and streams a state snapshot taken
// by its worker at a step boundary (at_step), on a thread of its own so that
// averaging does not wait. When the joiner holds the state it says HELLO
// again with `ready`; the contact names a round admit_ahead in the future and
// announces the new table to everyone, so every member switches at that
// round and nobody waits for the joiner.
class Membership {
 public:
  // The members started together (every one from round 0).
  Membership(protocol::Node& node, proto::Member self, const std::map<std::string, std::string>& peers,
             MembershipOptions options, WorkerState& state, MetricsRegistry& metrics);
  // A joiner, with the table it was admitted with (it contains `self`).
  Membership(protocol::Node& node, proto::Member self, const proto::MemberList& admitted,
             MembershipOptions options, WorkerState& state, MetricsRegistry& metrics);
  ~Membership();
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // The view for gossip round (or AllReduce step) `round`; includes this node.
  topology::View view_at(uint64_t round) const;
  // The view at the last round the worker reported (at_step).
  topology::View view() const;
  // Member id -> group label, for the members whose label is known.
  std::map<std::string, std::string> labels() const;
  // True when the label of every member of view_at(round) is known.
  bool labels_known(uint64_t round) const;
  // The round from which `id` is in the view.
  uint64_t since_round(const std::string& id) const;
  // The member table (id, endpoint, group, since_round), this node first.
  proto::MemberList members() const;

  // Notified after every change of the table (a member in or out, a label
  // learned). A worker that needs a view or labels waits on it with
  // wait_until, never sleeping in a loop; a room that waits on facts of its
  // own as well may notify it too (a spurious wake-up costs one look).
  protocol::ChangeSignal& changes() { return changed_; }
  // True as soon as `ready()` holds, false at `deadline` or on `stop`;
  // `ready` is looked at again after every change.
  bool wait_until(const std::function<bool()>& ready, std::chrono::steady_clock::time_point deadline,
                  std::stop_token stop) const {
    return changed_.wait_until(ready, deadline, stop);
  }

  // Starts failure detection, counting silence from now, and the injected
  // faults other than delay (Node::arm_faults). Call it once every member is
  // known to be up (after the start-up barrier): before that a slow starter
  // would be evicted for still loading its data.
  void arm();
  // Tells every member this node is leaving (SIGTERM), then stops. The
  // LEAVEs are flushed when the node's sockets close (flush_on_close): a
  // peer that is up takes this member out of its view before the process
  // has exited.
  void leave();

  // Accept joiners from now on (a member that never calls it refuses none
  // and admits none: HELLOs wait in the mailbox).
  void set_join_policy(JoinPolicy policy);
  // The worker calls it at every step boundary with the round it completed:
  // a joiner waiting for state gets `snapshot()` (taken here, on the worker's
  // thread, so the state is consistent), streamed by the transfer thread.
  void at_step(uint64_t round, const std::function<ReplicaState()>& snapshot);

  // Applies one validated control message (HEARTBEAT, MEMBER_LIST, LEAVE,
  // HELLO; others are ignored). The membership thread calls it for every one
  // it takes from the mailbox; the fuzz target calls it directly.
  void handle(const protocol::Message& m);

 private:
  struct Entry {
    std::string endpoint;
    std::string group;
    uint64_t since_round = 0;
    std::chrono::steady_clock::time_point last_heard;
  };
  struct Joiner {
    std::string endpoint;
    std::string group;
    std::chrono::steady_clock::time_point deadline;
    bool refused = false;
    bool state_sent = false;
    // Its endpoint is connected: only then may at_step queue its state (a
    // contact stepping faster than the connect would send to no one).
    bool connected = false;
  };

  void start();
  void loop(std::stop_token stop);
  void handle_hello(const std::string& id, const proto::Hello& hello);
  void merge(const proto::MemberList& list);
  // The beat due now comes `late` (this process or thread did not run): the
  // peers' heartbeats of that time are still queued here, so the pause is
  // added to their silence allowance instead of evicting them for it.
  void excuse_pause(std::chrono::steady_clock::duration late);
  void beat();
  void drop(const std::string& id, const char* why);
  // node_.add_peer; false (logged) when the transport cannot connect there.
  bool connect(const std::string& id, const std::string& endpoint);
  void publish();
  void send_list(const std::string& to, const proto::MemberList& list);
  proto::MemberList table() const;  // with mu_ held
  topology::View view_locked(uint64_t round) const;
  void transfer_loop(std::stop_token stop);

  protocol::Node& node_;
  proto::Member self_;
  MembershipOptions options_;
  WorkerState& state_;
  Gauge& members_gauge_;
  Counter& evictions_;
  Counter& joins_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;           // peers only
  static constexpr size_t kDepartedPerMember = 4;  // tombstones kept per place in the table
  DepartedSet departed_{kDepartedPerMember * options_.max_members};
  std::map<std::string, Joiner> joiners_;  // HELLO received, not yet in the table
  std::optional<JoinPolicy> policy_;
  uint64_t last_round_ = 0;
  uint32_t changes_ = 0;
  uint32_t published_view_ = 0;  // the id of the view last published
  bool armed_ = false;
  protocol::ChangeSignal changed_;

  std::mutex transfer_mu_;
  std::condition_variable_any transfer_cv_;
  std::deque<std::pair<std::string, std::shared_ptr<const ReplicaState>>> transfers_;
  std::jthread transfer_thread_;
  std::jthread thread_;
};

}  // namespace gossipd::daemon
