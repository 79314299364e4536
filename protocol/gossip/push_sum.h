#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/collectives/error_feedback.h"
#include "protocol/gossip/crossover.h"
#include "protocol/wire/tags.h"

namespace gossipd::protocol {

// Stochastic Gradient Push (Assran et al. 2019): push-sum over SGP's
// time-varying directed exponential graph. Each member holds numerators x
// (the buffer the optimizer updates) and a weight per segment; every round
// it keeps a share 1/(k+1) of both and pushes the same share to each of its
// k out-peers (topology::exponential_out_peers), then adds what its in-peers
// pushed. Gradients are taken at the de-biased z = x / w. Weights are per
// segment so that a skipped segment (the sender's and receiver's sums stay
// in step) never biases another. With `overlap` (OSGP) a round sends
// without waiting and folds in the previous round's messages instead.
//
// Pacing (GossipOptions::pace, plain SGP only): a member tells this round's
// in-peers that it is in the round, and pushes to an out-peer only once that
// one has said so; on a bandwidth-bound network a member that ran ahead
// would otherwise push onto links that still carry the round the others
// wait for. Whoever still waits repeats its notes every deadline / 8.
//
// Lost messages take their mass with them: under loss the weights shrink
// round after round (by 5% a round at 10% loss). Two things keep training
// sound then: the worker takes its optimizer step on z and stores x = w z
// (rebias), so the step on the model is the learning rate whatever w is;
// and a segment whose weight falls below kMinWeight doubles its numerators
// and weight (z unchanged, exact in floating point), so weights stay within
// a factor of a few of each other and never underflow. Without loss no
// weight ever gets there.
//
// --robust clip (GossipOptions::clip): a pushed segment is mixed in the
// de-biased values, z ← z + ω/(w + ω)·clip(z_j − z, τ) with w this
// member's weight and ω the one pushed (ClippedGossip), and ω counts for at
// most w: a member cannot buy weight. An attacker (GossipOptions::attack)
// pushes its attack on z, times its weight.
class PushSumGossip {
 public:
  PushSumGossip(Node& node, SegmentTable segments, GossipOptions options, size_t peers = 1,
                bool overlap = false);

  RoundStats run_round(const topology::View& view, uint64_t round, std::span<float> x);

  // z = x / w, segment by segment.
  void debias(std::span<const float> x, std::span<float> z) const;
  // x = w z, segment by segment (after a step taken on z).
  void rebias(std::span<const float> z, std::span<float> x) const;
  const std::vector<double>& weights() const { return weights_; }
  // For a joiner taking a snapshot, or after a view change re-weights.
  void set_weights(std::vector<double> weights);

  // --robust clip's record of each peer; nullptr without it.
  const ClippedGossip* clipping() const { return clip_.get(); }

  static constexpr uint32_t kTag = tags::first(tags::User::kPushSum);
  static constexpr double kMinWeight = 0.25;

 private:
  using Clock = std::chrono::steady_clock;
  bool pacing() const { return options_.pace && !overlap_; }
  std::chrono::milliseconds renudge() const {
    return pacing() ? std::max(std::chrono::milliseconds(1), options_.segment_deadline / 8)
                    : std::chrono::milliseconds(0);
  }
  // This round's pushes: a share of every segment to each out-peer.
  void push(const topology::View& view, uint64_t round, std::span<float> x, Clock::time_point deadline,
            RoundStats& stats);
  // Adds what the in-peers of `inbox`'s round pushed, waiting for it from
  // `start` (the deadlines learn from its arrivals).
  void fold_in(const topology::View& view, SegmentInbox& inbox, std::span<float> x, Clock::time_point start,
               RoundStats& stats);
  void keep_weights_up(std::span<float> x);
  // What segment s carries to the out-peers: the share xs, or an
  // attacker's attack on its de-biased values (times its weight). One
  // payload goes to every out-peer: an attack aimed at a receiver aims at
  // `to`, the first.
  std::span<const float> outbound(uint32_t s, uint64_t round, std::span<const float> xs, std::string_view to);
  // An attacker that learns from what it receives (--inject-byzantine alie,
  // dissensus) sees `peer`'s push `msg` of weight w, de-biased.
  void observe(const std::string& peer, uint32_t s, std::span<const float> xs, const Message& msg, double w);
  // --robust clip: mixes `peer`'s push `msg` of weight w into segment s.
  void mix_clipped(const std::string& peer, uint32_t s, std::span<float> xs, const Message& msg, double w,
                   RoundStats& stats);

  Node& node_;
  SegmentTable segments_;
  GossipOptions options_;
  ErrorFeedback feedback_;
  size_t peers_;
  bool overlap_;
  bool pushed_ = false;  // this member has pushed in a round (OSGP: last_pushed_ is it)
  uint64_t last_pushed_ = 0;
  std::vector<double> weights_;
  std::optional<SegmentAttack> attack_;
  std::unique_ptr<ClippedGossip> clip_;
  SegmentDeadlines deadlines_;
  std::vector<float> scratch_, received_;  // an attacked share; a received segment's z
  std::vector<float> observed_;            // observe(): the own z
};

}  // namespace gossipd::protocol
