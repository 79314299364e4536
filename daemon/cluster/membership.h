#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "daemon/cluster/accusations.h"
#include "daemon/cluster/admission.h"
#include "daemon/cluster/auto_group.h"
#include "daemon/cluster/departed_set.h"
#include "daemon/cluster/local_health.h"
#include "daemon/cluster/membership_delegate.h"
#include "daemon/cluster/parted_members.h"
#include "daemon/cluster/prober.h"
#include "daemon/cluster/share_queue.h"
#include "daemon/cluster/state_transfer.h"
#include "daemon/cluster/suspicions.h"
#include "daemon/cluster/update_queue.h"
#include "daemon/observe/metrics.h"
#include "protocol/transport/change_signal.h"
#include "protocol/transport/node.h"
#include "topology/view.h"

namespace gossipd::daemon {

struct MembershipOptions {
  // SWIM's protocol period (--heartbeat-ms): each member probes one member
  // per period; an unanswered probe is retried through `indirect_probes`
  // others after `probe_timeout` (default: half the period).
  std::chrono::milliseconds heartbeat_interval{200};
  std::chrono::milliseconds probe_timeout{0};  // 0: half of heartbeat_interval
  size_t indirect_probes = 3;
  // A suspected member that does not refute this long is evicted; a member
  // that hears from nobody this long is the one cut off (on_lost).
  std::chrono::milliseconds failure_timeout{3000};
  // Anti-entropy: the whole table exchanged with one random member this
  // often, times members / 32 past 32 members (0: never); the first
  // exchange at a random point of that period, so that members started
  // together do not all send their tables at once.
  std::chrono::milliseconds push_pull_interval{10000};
  // Updates piggybacked on one probe at most.
  size_t max_piggyback = 16;
  // Lifeguard's local health (Dega, Gupta, Mair 2018; memberlist's
  // awareness): a score from 0 to this, up by one for each probe of this
  // member's that got no ACK, each suspicion of itself it refutes and each
  // period of its own that came late, down by one for each probe answered.
  // The period and the probe timeout stretch by (1 + score): a member too
  // slow to hear its peers' answers in time probes less and suspects fewer
  // of them, rather than the cluster evicting them for its own slowness
  // (0: off).
  size_t max_local_health = 8;
  // Called once, from the membership thread, when this member finds itself
  // cut off: it heard from none of its peers for the failure timeout (it
  // was evicted while it was away, or every peer is gone), or its part of a
  // partition met the larger one. It must not go on training alone; the
  // member ends with `why`, and may enter the cluster again through one of
  // `contacts` (endpoints of members of the part that goes on, the likeliest
  // first).
  std::function<void(const std::string& why, const std::vector<std::string>& contacts)> on_lost;
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
  // --group auto (auto_group.h): from find_group() on, this member measures
  // its round trips to the others and takes a label from them; peers within
  // this round trip share its group (0: it keeps the label it started with).
  std::chrono::milliseconds auto_group_near{0};
};

// The live view. Every member keeps a table of members, each with the round
// from which it is in the view (`since_round`: 0 for the members started
// together, the announced round for a joiner); the view for round r is
// every member with since_round <= r. The view epoch is a hash of the (id,
// since_round) pairs, so members with the same table draw the same topology
// whatever order they learned it in.
//
// Failure detection and dissemination are SWIM's (Das, Gupta, Motivala
// 2002), as HashiCorp's memberlist runs it: every period a member pings one
// member (round-robin over a shuffled list); without an ACK in the probe
// timeout it asks `indirect_probes` others to ping it (PING_REQ, the ACK
// relayed); without any by the period's end the target is SUSPECT. A
// suspected member that hears it refutes with a higher incarnation (ALIVE);
// one that does not within the failure timeout is DEAD and evicted. These
// updates, joins and leaves ride on the probes, each sent
// retransmit_limit(n) times, and the whole table is exchanged with one
// random member every push-pull interval (anti-entropy). A member's traffic
// is a few probes a period whatever the cluster's size. Departures apply at
// once; a member that heard from nobody for the failure timeout (evicted
// while it was paused, or alone) calls on_lost instead of training alone.
//
// Joining (see run_command): a joiner sends HELLO to any member (the
// contact), which replies with the table and streams a state snapshot taken
// by its worker at a step boundary (at_step), on a thread of its own so that
// averaging does not wait. When the joiner holds the state it says HELLO
// again with `ready`; the contact names a round admit_ahead in the future and
// announces the new table to everyone, so every member switches at that
// round and nobody waits for the joiner.
//
// Membership keeps the table, the view, the lock and the thread; its parts
// are types of their own, as memberlist splits it, none of which knows
// Membership: Prober (prober.h: the failure detector, a state machine that
// returns the probes to send) with ProbeOrder, Suspicions (the suspicion
// timers), LocalHealth (Lifeguard's score), UpdateQueue (dissemination),
// DepartedSet (tombstones), PartedMembers (those evicted for silence, looked
// for after a partition), Admission (the joiners and the join policy) and
// ShareQueue (their downloads), and MembershipDelegate for what it knows of
// the member.
class Membership {
 public:
  // The members started together (every one from round 0).
  // `delegate` (the member's: its pace, where views go) outlives it.
  Membership(protocol::Node& node, proto::Member self, const std::map<std::string, std::string>& peers,
             MembershipOptions options, MembershipDelegate& delegate, MetricsRegistry& metrics);
  // A joiner, with the table it was admitted with (it contains `self`).
  Membership(protocol::Node& node, proto::Member self, const proto::MemberList& admitted,
             MembershipOptions options, MembershipDelegate& delegate, MetricsRegistry& metrics);
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
  // Whether `id` is in the table (this node included), at whatever round.
  bool knows(const std::string& id) const;
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
  // Stops probing and answering, telling nobody: training is over (the
  // others are done or evict it). Without it a member that lingers after
  // training (--linger-ms) would find itself cut off once its node closed.
  void stop();

  // --group auto: measure the round trips to the members now (they are all
  // up) and take a label from them (auto_group.h); labels_known is false
  // until then. Nothing when the label was given.
  void find_group();

  // Accept joiners from now on (a member that never calls it refuses none
  // and admits none: HELLOs wait in the mailbox).
  void set_join_policy(JoinPolicy policy);
  // The worker calls it at every step boundary with the round it completed:
  // a joiner waiting for a share of the state (the whole state for a joiner
  // that asks for no share) gets `snapshot(span)` (taken here, on the
  // worker's thread, so the state is consistent; SGP splits its mass of the
  // span's segments with the joiner), the span streamed by the share queue's thread.
  void at_step(uint64_t round, const std::function<ReplicaState(const ShareSpan&)>& snapshot);

  // --evict-byzantine: a member named Byzantine by `quorum` distinct
  // members (this one's accusations and those that reach it) leaves the
  // view and is refused should it come back in this run. Without it (0)
  // accusations are kept and passed on, never acted on.
  void evict_byzantine(size_t quorum);
  // This member names `id` Byzantine (its --robust named it): the
  // accusation goes out on the probes, with every accuser of `id` known here.
  void accuse(const std::string& id);
  // How many distinct members are known here to have accused `id`.
  size_t accusers_of(const std::string& id) const;

  // Applies one validated control message (PING, ACK, PING_REQ,
  // MEMBER_LIST, LEAVE, HELLO; others are ignored). The membership thread calls it for every one
  // it takes from the mailbox; the fuzz target calls it directly.
  void handle(const protocol::Message& m);

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::string endpoint;
    std::string group;
    uint64_t since_round = 0;
    uint64_t incarnation = 0;
    bool knows_us = false;  // a probe or table from it since this member started

    static Entry of(const proto::Member& m) {
      return Entry{m.endpoint(), m.group(), m.since_round(), m.incarnation(), false};
    }
  };
  void start();
  void loop(std::stop_token stop);
  void handle_hello(const std::string& id, const proto::Hello& hello);
  void merge(const proto::MemberList& list);
  // The tick due now comes `late` (this process or thread did not run): the
  // timers of that time are moved by the pause instead of suspecting the
  // peers or this member for it.
  void excuse_pause(Clock::time_point now, Clock::duration late);
  // `evicted`: for silence (not a LEAVE or a restart): it may be a
  // partition's other side, which this member then looks for (reunion).
  void drop(const std::string& id, const std::string& why, bool evicted = false);
  // node_.add_peer; false (logged) when the transport cannot connect there.
  bool connect(const std::string& id, const std::string& endpoint);
  void publish();
  void send_list(const std::string& to, const proto::MemberList& list);
  proto::MemberList table() const;  // with mu_ held
  topology::View view_locked(uint64_t round) const;
  void send_share(const ShareTransfer& job);  // on the share queue's thread
  void expire_joiners();

  // SWIM (membership_probe.cc).
  void tick();
  bool end_probe(Clock::time_point now);
  void expire_suspicions(Clock::time_point now);
  bool cut_off(Clock::time_point now);
  // --group auto (membership_auto_group.cc).
  void measure_round_trips(Clock::time_point now);
  bool on_round_trip(const protocol::Message& m);  // true: the ACK of a measuring PING
  std::string take_group_if_settled();             // with mu_ held; the label taken, or ""
  void group_taken(const std::string& label);      // without mu_: tells the delegate and the waiters
  // A partition's two sides (membership_reunion.cc).
  void seek_reunion(Clock::time_point now);
  void on_reunion(const protocol::Message& m);
  void send_reunion(const std::string& to, const std::string& endpoint, bool answer);
  std::string lowest_id() const;  // of the view, this member included; with mu_ held
  // Why this member's part stops for the part `theirs` describes ("" when
  // this part goes on); with mu_ held.
  std::string yield_to(const std::string& from, const proto::Reunion& theirs,
                       const std::string& endpoint) const;
  void start_probe(Clock::time_point now);
  void probe_indirectly();
  void push_pull(Clock::time_point now);
  void on_ping(const protocol::Message& m);
  void on_ack(const protocol::Message& m);
  void on_ping_req(const protocol::Message& m);
  void apply(const proto::Probe& probe);
  bool apply_about_self(const proto::MemberUpdate& u);  // with mu_ held
  bool apply_one(const proto::MemberUpdate& u);         // with mu_ held; true: the table changed
  // --evict-byzantine (membership_evict.cc), with mu_ held: the accusers an
  // ACCUSED update names taken in (passed on when any is new); why the
  // accused goes, when it now has the quorum ("" otherwise).
  std::string take_accusation(const proto::MemberUpdate& u);
  std::string accused_by(const std::string& id, const std::string& accuser);
  void queue_accusation(const std::string& id);
  void take_own_accusations();             // without mu_: those accuse() left, on the membership thread
  void send_probe(const Prober::Send& s);  // with this member's updates piggybacked
  void queue_update(proto::MemberUpdate::Kind kind, const std::string& id);  // with mu_ held
  const std::vector<std::string>& peer_ids();                                // with mu_ held
  Clock::time_point next_wake() const;
  std::chrono::milliseconds probe_timeout() const;

  protocol::Node& node_;
  proto::Member self_;
  MembershipOptions options_;
  MembershipDelegate& delegate_;
  Gauge& members_gauge_;
  Counter& evictions_;
  Counter& joins_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;           // peers only
  static constexpr size_t kDepartedPerMember = 4;  // tombstones kept per place in the table
  DepartedSet departed_{kDepartedPerMember * options_.max_members};
  // HELLOs received, not yet in the table (membership_join.cc).
  Admission admission_{options_.max_pending_joiners, options_.join_timeout};
  uint64_t last_round_ = 0;
  uint32_t changes_ = 0;
  uint32_t published_view_ = 0;  // the id of the view last published
  bool armed_ = false;
  Clock::time_point armed_at_{};  // when it started (arm): a newcomer's grace for probes unanswered
  protocol::ChangeSignal changed_;
  // SWIM's state (membership_probe.cc).
  Prober prober_;  // this period's probe and the PINGs sent for others' PING_REQs
  std::mt19937_64 rng_;
  UpdateQueue updates_;
  // The entries suspected, each with its eviction deadline; an entry that
  // leaves the table leaves it too.
  Suspicions suspicions_;
  // The number of changes_ as of which every entry had a label: the
  // per-period check skips its scan of the table.
  uint32_t all_labelled_at_ = ~0u;
  std::vector<std::string> peer_ids_;  // entries_' ids as of table change
  uint32_t peer_ids_at_ = ~0u;         // ... number changes_
  Clock::time_point next_tick_;
  Clock::time_point next_push_pull_;
  Clock::time_point heard_;  // the last message from any peer
  bool lost_ = false;
  // Members evicted for silence in the last kReunionWindow; a REUNION goes
  // to one of them each period (membership_reunion.cc).
  static constexpr auto kReunionWindow = std::chrono::minutes(10);
  PartedMembers parted_{kDepartedPerMember * options_.max_members, kReunionWindow};
  // --group auto: measuring from find_group() until the label is taken.
  bool measuring_ = false;
  RoundTrips round_trips_{std::chrono::seconds(1), options_.auto_group_near};
  Counter& suspected_;
  Counter& refutations_;
  Counter& indirect_probes_;
  Counter& stale_updates_;
  Counter& reunions_;
  Counter& shares_abandoned_;
  // Lifeguard's local health score (MembershipOptions::max_local_health), under mu_.
  LocalHealth health_{options_.max_local_health};
  Gauge& health_gauge_;
  // --evict-byzantine (membership_evict.cc), under mu_.
  Accusations accusations_{options_.max_members};
  size_t evict_quorum_ = 0;
  std::vector<std::string> own_accusations_;  // accuse()'s, not yet taken
  Counter& byzantine_evicted_;
  void adjust_health(int delta);             // health_ and its gauge; under mu_
  std::chrono::milliseconds period() const;  // the protocol period, stretched by local health; under mu_
  std::chrono::milliseconds push_pull_period() const;  // push_pull_interval scaled past 32 members; under mu_

  // The joiners' shares, sent one at a time on a thread of their own.
  ShareQueue shares_{[this](const ShareTransfer& job) { send_share(job); }};
  std::jthread thread_;
};

}  // namespace gossipd::daemon
