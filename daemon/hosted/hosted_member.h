#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "daemon/cmd/run_flags.h"
#include "daemon/hosted/hosted_mode.h"
#include "daemon/hosted/step_rendezvous.h"
#include "daemon/member/member.h"

namespace gossipd::daemon {

// Where a hosted member listens and how it entered, as its events told.
struct HostedInfo {
  std::string id;
  std::string endpoint;
  uint32_t http_port = 0;
  bool joined = false;
  uint64_t start_round = 0;  // the rounds done when training began (a joiner's admission)
};

// One member of a cluster whose model a host process computes (the Python
// module's Worker): gossipd run's Member, on a thread of its own, over a
// HostedMode. It is built from gossipd run's flags, so it is the same
// member as a daemon (membership, joins, heartbeats, CURVE, fault
// injection, /status and /metrics, checkpoints). The host trains in step
// with it through rendezvous(): its tensors are views of arena(), which
// the member's thread reads and writes only on its own turn.
class HostedMember {
 public:
  // `args`: gossipd run's flags ("--id", "w0", "--algo", "crossover", ...).
  // Returns once the arena exists; throws UsageError for bad flags or
  // layout, and the member's own error if it failed before that.
  HostedMember(const std::vector<std::string>& args, HostedLayout layout);
  ~HostedMember();
  HostedMember(const HostedMember&) = delete;
  HostedMember& operator=(const HostedMember&) = delete;

  const HostedArena& arena() const { return arena_; }
  StepRendezvous& rendezvous() { return rendezvous_; }
  // Waits until the first step may begin (the others met, or the join
  // downloaded its state); throws HostedError.
  HostedInfo wait_ready();
  HostedInfo info() const;
  uint64_t round() const;
  // Whether every member holds the one model exactly (Mode::one_replica):
  // the host's buffers then travel with the gradients, as its parameters do.
  bool one_replica() const;
  // The host waits this long for a step's exchange: gossipd run's
  // --timeout-ms beyond the failure timeout (a re-formed ring included).
  std::chrono::milliseconds step_timeout() const;
  // Stops the member (it leaves the cluster gracefully) and its thread;
  // idempotent, bounded by the member's own timeouts.
  void close();
  // Between two steps: ends training with the members' exact average (the
  // gossip protocols: one allreduce of the parameters and the optimizer's
  // state over the view, every member finishing at the same step), then
  // closes. Returns the members averaged: 0 where the mode keeps one replica
  // already or a member never came (the replica is then its own, and the
  // member's log says why). HostedError where the member failed.
  uint32_t finish();

 private:
  class Events;
  void run();

  RunCommandLine line_;
  StepRendezvous rendezvous_;
  std::stop_source stop_;
  std::unique_ptr<Events> events_;
  std::unique_ptr<HostedMode> mode_;
  std::unique_ptr<Member> member_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool loaded_ = false;
  std::string failure_;  // the member's error before the arena existed
  HostedArena arena_;
  std::jthread thread_;  // last: joins before the rest goes
};

}  // namespace gossipd::daemon
