#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/share_download.h"
#include "daemon/cluster/state_transfer.h"
#include "proto/gossip.pb.h"
#include "protocol/transport/node.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {

// The cluster refused this joiner (different model, protocol, segments...):
// a configuration error, reported in one line.
class JoinRefused : public protocol::Error {
 public:
  using protocol::Error::Error;
};

// Nobody answered at any --join endpoint within the timeout.
class NoMemberAnswered : public protocol::Error {
 public:
  using protocol::Error::Error;
};

struct JoinResult {
  std::string contact;         // the member that served the join
  proto::MemberList admitted;  // the table, with this node's since_round
  uint64_t since_round = 0;    // the first round this node takes part in
  uint64_t topology_seed = 1;
  // About when the cluster reaches since_round: starting earlier would only
  // wait out the first round's deadline and miss its segments.
  std::chrono::steady_clock::time_point start_at;
  ReplicaState state;               // the donors' shares of their snapshots
  std::vector<std::string> donors;  // who sent each share
  uint32_t shares_reasked = 0;      // shares asked again after their donor went silent
  uint32_t shares_taken_over = 0;   // shares a faster donor took over (DownloadPlan::take_over)
  double download_ms = 0;
  double snapshot_wait_ms = 0;  // the longest a share waited for its donor's snapshot
  double join_ms = 0;           // from the first HELLO to the admission
  double answer_ms = 0;         // from the first HELLO to the contact's answer
};

// The joiner's side of Membership's join (see membership.h): says HELLO to
// the endpoints in turn until one answers, downloads the state in shares
// from up to `donors` members at once (the contact and others of its table;
// a share whose donor goes silent is asked of another), says it is ready to
// the donor of share 0 and waits for the round it enters at. `hello` describes this
// worker (endpoint, group, model sizes, protocol). `on_state`, when set, is
// called with the downloaded state before the joiner says it is ready (the
// daemon evaluates the model it starts from there). Throws JoinRefused,
// NoMemberAnswered when no member answers within `timeout`,
// StateTransferError when the download fails or the contact never admits
// this worker, protocol::Aborted on stop.
JoinResult join_cluster(protocol::Node& node, const std::vector<std::string>& endpoints, proto::Hello hello,
                        size_t optimizer_floats, std::chrono::milliseconds timeout, size_t donors,
                        std::stop_token stop, const std::function<void(const ReplicaState&)>& on_state = {});

}  // namespace gossipd::daemon
