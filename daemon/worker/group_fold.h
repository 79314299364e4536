#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/cluster/membership.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/worker_state.h"
#include "daemon/worker/momentum_fit.h"
#include "protocol/group.h"
#include "protocol/group_exchange.h"
#include "protocol/segment_table.h"
#include "topology/groups.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// Omnivore's estimate of the momentum that asynchrony between `groups`
// groups adds (1 - 1/g), and the explicit momentum --momentum auto uses:
// the target less it, not below the floor.
float implicit_momentum(size_t groups);
float auto_momentum(float target, float floor, size_t groups);

// How GroupFold sets the optimizer's momentum.
struct MomentumRule {
  bool automatic = false;  // --momentum auto; otherwise the optimizer's stays
  float target = 0.9f;
  float floor = 0.0f;
};

// Compute groups' side of a step (--algo groups), after the group's update:
// the copies the asynchronous exchange brought from other groups are
// averaged into the segments they belong to (x_s <- x_s/2 + y_s/2, by the
// segment's owner in the group) and shared with the group over its ring, so
// the group's replicas stay bit-identical; then the exchange is offered the
// new parameters. Nothing here waits for another group: the ring's members
// first sum one flag each (who has something to fold), and only those with
// something contribute their segments to an allgather.
class GroupFold {
 public:
  GroupFold(protocol::Node& node, Membership& membership, std::map<std::string, std::string> labels,
            protocol::SegmentTable segments, protocol::GossipOptions gossip, MomentumRule momentum,
            trainer::Trainer& trainer, WorkerState& state, MetricsRegistry& metrics);

  // The ring of `view`: this member's compute group in it.
  std::vector<std::string> ring_of(const topology::View& view) const;
  // A tag per ring (its members), inside the compute groups' range.
  static uint32_t ring_tag(const std::vector<std::string>& members);
  // After the update of `round` (AllreduceWorkerOptions::after_update).
  void after_update(protocol::Group& ring, uint64_t round);

 private:
  // The segments ring rank `rank` owns, in order.
  std::vector<uint32_t> owned(const protocol::Group& ring, size_t rank) const;
  // Allgathers the owners' folded segments into every replica.
  void share(protocol::Group& ring, const std::vector<float>& flags, std::vector<protocol::FoldIn> mine);
  void report(const protocol::Group& ring, uint64_t round, const std::vector<protocol::FoldIn>& folded);
  // Sets the momentum for `groups` groups (every member of a group alike).
  void tune_momentum(size_t groups);

  protocol::Node& node_;
  Membership& membership_;
  std::map<std::string, std::string> labels_;
  protocol::SegmentTable segments_;
  MomentumRule momentum_;
  float implicit_ = 0;
  MomentumFit fit_;  // the group's update sequence: every member fits the same
  trainer::Trainer& trainer_;
  WorkerState& state_;
  Counter& folded_;
  Gauge& staleness_;
  size_t groups_ = 0;
  uint64_t folds_ = 0;
  double staleness_sum_ = 0;
  int64_t staleness_max_ = 0;
  protocol::AsyncGroupExchange exchange_;  // last: its thread stops first
};

}  // namespace gossipd::daemon
