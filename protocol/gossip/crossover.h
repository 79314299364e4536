#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "protocol/collectives/error_feedback.h"
#include "protocol/collectives/group.h"
#include "protocol/collectives/segment_inbox.h"
#include "protocol/gossip/group_averages.h"
#include "protocol/gossip/robust_group_mean.h"
#include "protocol/gossip/segment_deadlines.h"
#include "protocol/gossip/share_bound.h"
#include "protocol/robust/attack.h"
#include "protocol/robust/clipped_gossip.h"
#include "protocol/wire/codec.h"
#include "protocol/wire/tags.h"
#include "topology/hierarchy.h"
#include "topology/view.h"

namespace gossipd::protocol {

struct GossipOptions {
  uint64_t seed = 1;
  // A segment that has not arrived this long after the round started is
  // skipped (own copy kept): gossip never blocks on one peer. With
  // adaptive_deadline the most a round waits.
  std::chrono::milliseconds segment_deadline{2000};
  // Hierarchical: how long a group's exact average (not a segment: it cannot
  // be skipped) waits for a member before the round is given up
  // (gossipd run --timeout-ms).
  std::chrono::milliseconds group_timeout{10000};
  // --deadline adaptive: the deadline a round waits for segments (and,
  // paced, for its receivers' notes) is learned from the arrivals this
  // member has seen, segment_deadline its ceiling (segment_deadlines.h).
  bool adaptive_deadline = false;
  double deadline_quantile = DeadlineSpec{}.quantile;
  // Pacing: each round a worker tells the senders of this round and of the
  // last one that it has finished the last round (a small note each), and
  // sends a segment only once its receiver has said so (for the last
  // round's receivers, waiting at most deadline / 8). On a bandwidth-bound
  // network a worker that ran ahead would otherwise push next-round segments
  // onto links that still carry the ones the others wait for, and the rounds
  // drift apart (measured in tests/bench/README.md, "Pace"). Whoever is still
  // waiting repeats its notes every deadline / 8, so a lost note costs time,
  // not the segment. Crossover sends a segment whose receiver has not said so
  // by the round's deadline anyway (SGP keeps such a push: its mass).
  bool pace = false;
  // How segments travel (--compress); lossy codecs carry their rounding
  // into the next exchange (error_feedback.h). Every member must agree.
  CodecSpec codec;
  // The rounds a member exchanges in are this far apart (--local-steps H:
  // every H-th step); pacing and OSGP's fold look back this far.
  uint64_t rounds_apart = 1;
  // Fault injection (--inject-byzantine): this member sends these values in
  // place of its own (robust/attack.h). Flat crossover, SGP and OSGP.
  std::optional<AttackSpec> attack;
  // --robust clip: received segments are mixed by ClippedGossip
  // (robust/clipped_gossip.h) instead of averaged. Flat crossover, SGP and OSGP.
  std::optional<ClipSpec> clip;
  std::stop_token stop;
};

// The deadlines a protocol learns with these options.
inline DeadlineSpec deadline_spec(const GossipOptions& o) {
  DeadlineSpec d;
  d.ceiling = o.segment_deadline;
  d.adaptive = o.adaptive_deadline;
  d.quantile = o.deadline_quantile;
  return d;
}

// What one round did, for /status and the metrics.
struct RoundStats {
  size_t segments_sent = 0;
  size_t segments_received = 0;
  size_t segments_skipped = 0;
  size_t bytes_sent = 0;
  size_t bytes_received = 0;
  size_t segments_clipped = 0;  // --robust clip
  // Hierarchical: elements of the group's average and share that came out
  // NaN or infinite and kept this member's own value (group_averages.h).
  size_t values_refused = 0;
  std::vector<std::string> named;  // --robust clip: peers named Byzantine this round
  RoundStats& operator+=(const RoundStats& o);
};

// Crossover-SGD (Yeo et al.): every round, for every segment s, a fresh
// derangement of the view (topology::crossover_exchange) names whom this
// member sends s to and whom it receives s from; then x_s ← ½·x_s + ½·y_s.
// The mixing matrix is doubly stochastic, so the mean of the replicas is
// kept exactly (up to rounding) and no push-sum weight is needed.
class CrossoverGossip {
 public:
  CrossoverGossip(Node& node, SegmentTable segments, GossipOptions options);
  // One round over `view` (which must contain this node) on `params`.
  RoundStats run_round(const topology::View& view, uint64_t round, std::span<float> params);

  static constexpr uint32_t kTag = tags::first(tags::User::kCrossover);

  // --robust clip's record of each peer; nullptr without it.
  const ClippedGossip* clipping() const { return clip_.get(); }
  // What this member has learned of its peers' arrivals (--deadline).
  const SegmentDeadlines& deadlines() const { return deadlines_; }

 private:
  // Receives segment s from `from` by `deadline` (nullopt: not waited for,
  // taken only if it is in) and mixes it in; counts it in `stats`.
  void receive(SegmentInbox& inbox, const std::string& from, uint32_t s,
               std::chrono::steady_clock::time_point start,
               std::optional<std::chrono::steady_clock::time_point> deadline,
               std::chrono::milliseconds renudge, std::span<float> params, RoundStats& stats);
  // Mixes the received segment s of `peer` into x; counts it in `stats`.
  void mix(const std::string& peer, uint32_t s, std::span<float> x, const Message& msg, RoundStats& stats);

  Node& node_;
  SegmentTable segments_;
  GossipOptions options_;
  ErrorFeedback feedback_;
  std::optional<SegmentAttack> attack_;
  std::unique_ptr<ClippedGossip> clip_;
  SegmentDeadlines deadlines_;
  std::vector<float> received_;  // --robust clip: a segment's values, aligned
  // Pacing: who this node sent to and heard from in the last round it ran.
  uint64_t last_round_ = 0;
  bool has_last_ = false;
  std::set<std::string> last_receivers_, last_senders_;
};

// Hierarchical Crossover-SGD: (1) exact average inside each group with the
// ring allreduce; (2) crossover gossip between groups, where the member of a
// group that owns segment s (topology::GroupSpread) exchanges it with the
// owner of s in the group the derangement over groups names; (3) the group
// shares the owners' results (an allreduce of a buffer in which each member
// holds only the segments it owns), so members of a group end every round
// with identical replicas. The global mean is kept exactly when the groups
// are of equal size; with unequal groups every group weighs the same in the
// inter-group average, so replicas converge to the mean of the group means.
// With a codec (--compress) (1) and (3) travel in it as changes from points
// the group shares (group_averages.h); the members still end identical.
class HierarchicalCrossover {
 public:
  HierarchicalCrossover(Node& node, SegmentTable segments, GossipOptions options,
                        topology::GroupSpread spread = topology::GroupSpread::kSpread);
  // `labels`: member id -> group label, as learned from the members.
  RoundStats run_round(const topology::View& view, const std::map<std::string, std::string>& labels,
                       uint64_t round, std::span<float> params);
  // After a round failed (a group member timed out): the group's collective
  // sequence may differ between members now, so the next round builds it anew.
  void reset() {
    group_.reset();
    averages_.reset();
  }
  // The stop the group's collectives take from the next group built on
  // (a view watch's); the round's other waits keep options.stop.
  void stop_groups_with(std::stop_token stop) {
    group_stop_ = std::move(stop);
    reset();
  }

  static constexpr uint32_t kTag = tags::first(tags::User::kHierarchical);

  // --robust clip's record of the peers, its two judges' together (the
  // group's CenteredClip and ClippedGossip between groups); empty without it.
  std::map<std::string, PeerClipping> clipping_peers() const;

 private:
  Group& group_for(const topology::Groups& groups, size_t g, uint32_t view_id);
  // (1): params ← the group's mean (--robust clip: its robust mean); an
  // attacker puts its attack into it instead of its replica. Returns the
  // elements refused as not finite (the robust mean refuses a copy instead).
  size_t group_average(Group& group, uint64_t round, std::span<float> params);
  // (2): sends each segment the plan gives this member to its partner in
  // another group, and mixes into each segment it owns this round what its
  // partner sent; returns the segments it owns.
  std::vector<uint32_t> exchange(const topology::Groups& groups, uint32_t view_id, uint64_t round,
                                 std::span<const std::string> owners, std::span<float> params,
                                 RoundStats& stats);
  void receive_owned(SegmentInbox& inbox, const std::string& from, uint32_t s,
                     std::chrono::steady_clock::time_point start,
                     std::chrono::steady_clock::time_point deadline, std::span<float> params,
                     RoundStats& stats);
  // An attacker writes its attack into `segments` of its replica: all of
  // them before (1), those it owns before (3).
  void attack(std::span<const uint32_t> segments, uint64_t round, std::span<float> params);

  Node& node_;
  SegmentTable segments_;
  GossipOptions options_;
  topology::GroupSpread spread_;
  ErrorFeedback feedback_;
  GroupAverages averages_;                   // (1) and (3), in the run's codec
  SegmentDeadlines deadlines_;               // (2)
  std::optional<SegmentAttack> attack_;      // --inject-byzantine: (1) and (2)
  std::unique_ptr<RobustGroupMean> robust_;  // --robust clip: (1)
  std::unique_ptr<ClippedGossip> clip_;      // --robust clip: (2), at each segment's owner
  std::unique_ptr<ShareBound> bound_;        // --robust clip: (3), each owner's change clipped
  std::vector<float> received_;              // (2): a segment's values, aligned
  // Kept across rounds: its collective sequence numbers must keep counting.
  std::unique_ptr<Group> group_;
  uint32_t group_view_ = 0;  // the id of the view group_ was built for
  std::stop_token group_stop_ = options_.stop;
};

}  // namespace gossipd::protocol
