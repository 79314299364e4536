#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/checkpoint.h"
#include "daemon/cluster/join.h"
#include "daemon/cluster/membership.h"
#include "daemon/cluster/status_delegate.h"
#include "daemon/config/run_options.h"
#include "daemon/member/member_events.h"
#include "daemon/observe/evaluation_history.h"
#include "daemon/observe/http_server.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/observe/worker_state.h"
#include "daemon/worker/mode.h"
#include "daemon/worker/training_loop.h"
#include "protocol/transport/node.h"

namespace gossipd::daemon {

// Membership's word that this member is cut off from its cluster: it was
// evicted while it did not run, or its part of a partition yielded to the
// other. `contacts` are endpoints of members of the cluster that goes on,
// the likeliest first: a member that accepts joiners may enter it again
// through them, with its state downloaded anew (gossipd run's --rejoin).
class CutOff : public DaemonError {
 public:
  CutOff(const std::string& what, std::vector<std::string> contacts)
      : DaemonError(what), contacts_(std::move(contacts)) {}
  const std::vector<std::string>& contacts() const { return contacts_; }

 private:
  std::vector<std::string> contacts_;
};

// One member of a cluster, whatever its mode: the run scaffold every mode
// runs in, gossipd run's and any other process's (it prints nothing and
// never exits; what happens goes to MemberEvents, faults are thrown; the
// process-wide settings, OpenBLAS's threads and signals, are its
// holder's). The
// phases, in order: place (who is who), load (the mode's replica), open the
// node (transport, /status, /metrics), enter (join, resume or start), make
// the mode's worker, run it, finish. Members are declared in the order they
// are built, so they go in reverse (the HTTP server before the state it
// serves, membership before the node).
class Member {
 public:
  enum class End { kConfigChecked, kDone, kStopped };

  // `mode` has parsed its flags into itself (gossipd run) or been set up by
  // the caller; both must outlive the member. With `hub` the member talks
  // over it (--listen and --peers name inproc-hub:// endpoints), to other
  // members in the same process (gossipctl simulate); the hub outlives it.
  Member(const RunOptions& options, const Mode& mode, MemberEvents& events,
         protocol::InProcHub* hub = nullptr);
  ~Member();
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

  // Every phase; kConfigChecked under --check-config (nothing started).
  // `stop` ends the run (kStopped, after telling the others it leaves).
  // Throws UsageError for bad input and the protocol's and cluster's errors
  // for faults (the status then says "failed"; "cut_off" for CutOff).
  End run(std::stop_token stop);

  // After run() threw CutOff: the options that enter the same cluster again
  // through its contacts, on the addresses this member had bound (a port 0
  // made concrete), counted as one more rejoin.
  RunOptions rejoin_options(const CutOff& cut) const;

  // What /status serves (live from open_node on).
  WorkerState& state() { return state_; }
  const Replica& replica() const { return *replica_; }

 private:
  void place();
  std::string advertised_endpoint() const;
  void load();
  void open_node();
  void enter(std::stop_token stop);
  std::optional<JoinResult> join(std::stop_token stop);
  void adopt(const JoinResult& joined, std::stop_token stop);
  void start_or_resume();
  std::unique_ptr<Worker> make_worker();
  End finish(std::stop_token stop);
  void fail(const std::exception& e);
  // Throws the failure membership reported (on_lost, as CutOff), if it did.
  void throw_if_lost();
  End stopped();
  proto::ControlRecord record(const std::string& event) const;
  EvaluationSink evaluation_sink();
  TrainedReplica& trained();

  const RunOptions& o_;
  const Mode& mode_;
  MemberEvents& events_;
  protocol::InProcHub* hub_;
  // place()
  std::map<std::string, std::string> peers_;
  std::string listed_endpoint_;       // this member's own --peers entry, if it has one
  std::vector<std::string> members_;  // the initial members, sorted: index = rank
  size_t rank_ = 0;
  bool joining_ = false;
  // load()
  std::unique_ptr<Replica> replica_;
  std::optional<Checkpoint> resume_;
  // open_node()
  std::unique_ptr<JsonLinesWriter> log_;
  std::unique_ptr<protocol::Node> node_;
  proto::Member self_;
  WorkerState state_;
  StatusDelegate status_delegate_{state_};  // membership's view of this member: its /status
  MetricsRegistry metrics_;
  EvaluationHistory history_;  // what /history serves
  std::unique_ptr<HttpServer> http_;
  proto::Hello mine_;
  MembershipOptions membership_options_;
  // enter()
  size_t steps_ = 1;
  int epochs_ = 0;
  uint64_t topology_seed_ = 1;
  std::optional<proto::StateHeader> entered_from_;  // a join's or a checkpoint's header
  std::unique_ptr<Membership> membership_;
  // Stops the entry and the worker: the caller's stop, or membership's word
  // that this member is cut off from its cluster (`lost_why_`, then a failure).
  std::stop_source running_;
  std::mutex lost_mu_;
  std::string lost_why_;
  std::vector<std::string> lost_contacts_;
  // make_worker()
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<TrainingLoop> loop_;
};

}  // namespace gossipd::daemon
