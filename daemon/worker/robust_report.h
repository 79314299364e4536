#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/cluster/membership.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/worker_state.h"
#include "protocol/robust/clipped_gossip.h"

namespace gossipd::daemon {

// What --robust saw of each peer, the same for every protocol that takes
// it: a warning in the log for each member named, its record in /status
// (robustness: mixed, clipped, refused, named), and in /metrics
// gossipd_segments_clipped_total{peer} and gossipd_byzantine_named{peer}.
class RobustReport {
 public:
  // `id`: this member's; `what`: what a peer sends ("segments", "gradient
  // blocks"), for the warning.
  RobustReport(std::string id, std::string what, MetricsRegistry& metrics, WorkerState& state)
      : id_(std::move(id)), what_(std::move(what)), metrics_(metrics), state_(state) {}

  // --evict-byzantine: from now on each member named is accused to
  // `membership`, which evicts it once `quorum` members accused it
  // (membership.h; 0: nobody is accused).
  void evict_through(Membership& membership, size_t quorum);

  // After round `round`, in which `named` were named.
  void publish(const protocol::ClippedGossip& clip, const std::vector<std::string>& named, uint64_t round) {
    publish(clip.peers(), named, round);
  }
  // The same from a record of the peers (several judges' merged).
  void publish(const std::map<std::string, protocol::PeerClipping>& peers,
               const std::vector<std::string>& named, uint64_t round);

 private:
  std::string id_, what_;
  Membership* accuse_to_ = nullptr;  // --evict-byzantine
  MetricsRegistry& metrics_;
  WorkerState& state_;
  std::map<std::string, protocol::PeerClipping> reported_;  // per peer, as last put in the metrics
};

}  // namespace gossipd::daemon
