#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/cluster/share_queue.h"
#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// What a contact checks before it admits a joiner, and tells it.
struct JoinPolicy {
  // "" to admit; otherwise why not, in one line (sent back to the joiner).
  std::function<std::string(const proto::Hello&)> refuse;
  uint64_t topology_seed = 1;
};

// A contact's joiners: the members that said HELLO and are not yet in the
// table, what each asked for, and when each is forgotten. It decides
// nothing about the table and sends nothing: membership asks it whether a
// HELLO may be served, hands it the HELLOs it serves, and takes from it the
// shares of the state that are due.
class Admission {
 public:
  using Clock = std::chrono::steady_clock;
  struct Joiner {
    std::string endpoint;
    std::string group;
    Clock::time_point deadline;
    bool refused = false;
    bool state_sent = false;  // a share (or the whole state) went out: it may be admitted here
    // What it asked for: the shares not yet snapshot (index, of), and its
    // sizes to cut them (state_share.h).
    std::vector<std::pair<uint32_t, uint32_t>> wanted;
    std::vector<uint32_t> asked;
    std::vector<uint64_t> segment_lengths;  // share_cut_lengths
    size_t param_floats = 0;
    size_t optimizer_floats = 0;
    // Its endpoint is connected: only then may a step queue its state (a
    // contact stepping faster than the connect would send to no one).
    bool connected = false;
    // The snapshot its first share came from, kept while it joins when its
    // shares split no mass (cut anywhere: segment_lengths empty): a share it
    // asks for later goes out at once, not at the next step boundary.
    std::shared_ptr<const ReplicaState> held;
  };
  // The shares due at a step boundary, their state not yet taken, and the
  // joiners whose one snapshot serves every share (hold() keeps it).
  struct Due {
    std::vector<ShareTransfer> shares;
    std::set<std::string> kept;
  };
  struct Expired {
    std::string id;
    bool refused = false;
  };

  // `max_pending`: HELLOs from new ids beyond this many joins in progress are
  // dropped; `timeout`: a joiner not admitted in this long is forgotten.
  Admission(size_t max_pending, std::chrono::milliseconds timeout)
      : max_pending_(max_pending), timeout_(timeout) {}

  // Joiners are served once a policy is set (until then HELLOs wait).
  void set_policy(JoinPolicy policy) { policy_ = std::move(policy); }
  bool open() const { return policy_.has_value(); }
  uint64_t topology_seed() const { return policy_->topology_seed; }
  // Why the policy refuses `hello` ("" to admit); open() only.
  std::string refusal(const proto::Hello& hello) const { return policy_->refuse(hello); }
  // True when a HELLO from `id` would be one join too many.
  bool full(const std::string& id) const { return !joiners_.count(id) && joiners_.size() >= max_pending_; }
  size_t pending() const { return joiners_.size(); }

  // A HELLO not `ready` from `id`, refused when `why` is not empty: the
  // joiner is (re)registered (a repeat of the same HELLO keeps its state),
  // and the shares its held snapshot serves at once are returned.
  std::vector<ShareTransfer> hello(const std::string& id, const proto::Hello& hello, const std::string& why,
                                   Clock::time_point now);
  // Its reply went out on a connection to `endpoint`.
  void connected(const std::string& id, const std::string& endpoint);
  // A `ready` joiner this member may admit (served, not refused, its state
  // sent), taken out of the joiners; nullopt when it is none of these.
  std::optional<Joiner> take_ready(const std::string& id);
  bool serving(const std::string& id) const { return joiners_.count(id) > 0; }
  // `id` entered the table otherwise (an announcement, a member list).
  void forget(const std::string& id) { joiners_.erase(id); }

  // At a step boundary: every share asked for by a connected joiner, marked
  // sent.
  Due due();
  // Keeps `state` for `id`'s later shares (Due::kept).
  void hold(const std::string& id, std::shared_ptr<const ReplicaState> state);
  // The joiners past their deadline, forgotten, in id order.
  std::vector<Expired> expire(Clock::time_point now);

 private:
  // Queues the share `hello` asks for (the whole state when it asks none).
  static void want_share(Joiner& j, const proto::Hello& hello);
  // The shares `j` asked for that its held snapshot can serve now (emptied from `wanted`).
  static std::vector<ShareTransfer> from_held(const std::string& id, Joiner& j);

  size_t max_pending_;
  std::chrono::milliseconds timeout_;
  std::optional<JoinPolicy> policy_;
  std::map<std::string, Joiner> joiners_;  // HELLO received, not yet in the table
};

}  // namespace gossipd::daemon
