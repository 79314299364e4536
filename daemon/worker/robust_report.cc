#include "daemon/worker/robust_report.h"

#include <spdlog/spdlog.h>

namespace gossipd::daemon {

void RobustReport::evict_through(Membership& membership, size_t quorum) {
  if (quorum == 0) return;
  membership.evict_byzantine(quorum);
  accuse_to_ = &membership;
}

void RobustReport::publish(const std::map<std::string, protocol::PeerClipping>& peers,
                           const std::vector<std::string>& named, uint64_t round) {
  for (const std::string& peer : named) {
    spdlog::warn(
        "node '{}': member '{}' is named Byzantine in round {}: most of its {} were beyond the clipping "
        "radius (or not finite) round after round; they are left out from now on",
        id_, peer, round, what_);
    if (accuse_to_) accuse_to_->accuse(peer);
  }
  for (const auto& [peer, now] : peers) {
    protocol::PeerClipping& was = reported_[peer];
    const Labels labels{{"peer", peer}};
    metrics_.counter("gossipd_segments_clipped_total", "Segments --robust clip clipped, by sender", labels)
        .add(double(now.clipped - was.clipped));
    metrics_.gauge("gossipd_byzantine_named", "1 for a member --robust named Byzantine", labels)
        .set(now.named ? 1 : 0);
    was = now;
  }
  state_.update([&](proto::Status& s) {
    s.clear_robustness();
    for (const auto& [peer, now] : peers) {
      proto::PeerRobustness* r = s.add_robustness();
      r->set_peer(peer);
      r->set_segments_mixed(now.received);
      r->set_segments_clipped(now.clipped);
      r->set_segments_refused(now.refused);
      r->set_named(now.named);
    }
  });
}

}  // namespace gossipd::daemon
