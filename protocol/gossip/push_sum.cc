#include "protocol/gossip/push_sum.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "protocol/collectives/collective_channel.h"
#include "protocol/wire/errors.h"
#include "topology/exponential_graph.h"

namespace gossipd::protocol {
PushSumGossip::PushSumGossip(Node& node, SegmentTable segments, GossipOptions options, size_t peers,
                             bool overlap)
    : node_(node),
      segments_(std::move(segments)),
      options_(options),
      feedback_(options.codec),
      peers_(std::max<size_t>(peers, 1)),
      overlap_(overlap),
      weights_(segments_.size(), 1.0),
      deadlines_(deadline_spec(options)) {
  register_segments(node_, segments_);
  if (options_.attack) attack_.emplace(*options_.attack);
  if (options_.clip) clip_ = std::make_unique<ClippedGossip>(*options_.clip);
}

std::span<const float> PushSumGossip::outbound(uint32_t s, uint64_t round, std::span<const float> xs,
                                               std::string_view to) {
  if (!attack_) return xs;
  const double w = weights_[s];
  scratch_.resize(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) scratch_[i] = static_cast<float>(xs[i] / w);
  const auto z = attack_->apply(s, round, scratch_, to);
  for (size_t i = 0; i < xs.size(); ++i) scratch_[i] = static_cast<float>(z[i] * w);
  return scratch_;
}

void PushSumGossip::observe(const std::string& peer, uint32_t s, std::span<const float> xs,
                            const Message& msg, double w) {
  received_.resize(xs.size());
  std::memcpy(received_.data(), msg.payload.at(0).data(), xs.size() * sizeof(float));
  const auto in = static_cast<float>(1 / w), own = static_cast<float>(1 / weights_[s]);
  observed_.resize(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    received_[i] *= in;
    observed_[i] = xs[i] * own;
  }
  attack_->observe(peer, s, received_, observed_);
}

void PushSumGossip::mix_clipped(const std::string& peer, uint32_t s, std::span<float> xs, const Message& msg,
                                double w, RoundStats& stats) {
  if (clip_->named(peer)) {  // named Byzantine: skipped as a lost segment
    ++stats.segments_skipped;
    return;
  }
  const double own = weights_[s];
  const double in = std::min(w, own);
  received_.resize(xs.size());
  std::memcpy(received_.data(), msg.payload.at(0).data(), xs.size() * sizeof(float));
  // In the de-biased values z = xs / own and z_j = received / w, then
  // stored as numerators of weight own + in, in one pass:
  // (z + c·(z_j − z))·(own + in) = xs·(1 − c)(own + in)/own + received·c(own + in)/w.
  const double d = ClippedGossip::distance(xs, 1 / own, received_, 1 / w);
  const auto share = clip_->share(peer, s, d, clip_->cold(s) ? ClippedGossip::norm(xs) / own : 0,
                                  static_cast<float>(in / (own + in)));
  const double c = share.scale;
  const auto a = static_cast<float>((1 - c) * (own + in) / own), b = static_cast<float>(c * (own + in) / w);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = a * xs[i] + b * received_[i];
  weights_[s] = own + in;
  stats.segments_clipped += share.clipped;
  ++stats.segments_received;
  stats.bytes_received += xs.size() * sizeof(float);
}

void PushSumGossip::set_weights(std::vector<double> weights) {
  if (weights.size() != segments_.size()) throw ProtocolConfigError("push-sum: one weight per segment");
  weights_ = std::move(weights);
}

void PushSumGossip::debias(std::span<const float> x, std::span<float> z) const {
  for (size_t s = 0; s < segments_.size(); ++s) {
    const auto& seg = segments_[s];
    const float inv = static_cast<float>(1.0 / weights_[s]);
    for (size_t i = seg.offset; i < seg.offset + seg.length; ++i) z[i] = x[i] * inv;
  }
}

void PushSumGossip::rebias(std::span<const float> z, std::span<float> x) const {
  for (size_t s = 0; s < segments_.size(); ++s) {
    const auto& seg = segments_[s];
    const float w = static_cast<float>(weights_[s]);
    for (size_t i = seg.offset; i < seg.offset + seg.length; ++i) x[i] = z[i] * w;
  }
}

void PushSumGossip::keep_weights_up(std::span<float> x) {
  for (size_t s = 0; s < segments_.size(); ++s) {
    double& w = weights_[s];
    if (!(w > 0.0)) continue;
    int doublings = 0;
    while (w < kMinWeight) {
      w *= 2.0;
      ++doublings;
    }
    if (doublings == 0) continue;
    const float factor = std::ldexp(1.0f, doublings);
    for (float& v : x.subspan(segments_[s].offset, segments_[s].length)) v *= factor;
    feedback_.scale(segments_[s].offset, segments_[s].length, factor);
  }
}

RoundStats PushSumGossip::run_round(const topology::View& view, uint64_t round, std::span<float> x) {
  check_segment_table(segments_, x.size());
  RoundStats stats;
  auto self = view.index_of(node_.id());
  if (!self) throw ProtocolConfigError("node '" + node_.id() + "' is not in the view it gossips over");
  if (view.size() < 2) return stats;
  // Plain SGP receives this round (opened first, so that with pacing its
  // in-peers hear at once that they may push); OSGP folds the previous one.
  std::optional<SegmentInbox> receiving;
  if (!overlap_) {
    receiving.emplace(node_, kTag, round, true, options_.codec);
    if (pacing()) {
      for (size_t from : topology::exponential_in_peers(view.size(), *self, round, peers_)) {
        receiving->announce_ready(view.member(from));
      }
    }
  }
  // A paced push waits for its receiver up to --segment-deadline-ms, even
  // with a learned deadline: one it gives up on it keeps (its mass), and
  // its receiver waits for it in vain.
  push(view, round, x, Clock::now() + options_.segment_deadline, stats);
  // OSGP folds the previous round only where this member took part in it:
  // nobody pushed to it before its first round (round 1, a joiner's first,
  // a resumed member's), and waiting a deadline there only to skip cost 2 s.
  const bool follows = pushed_ && last_pushed_ + options_.rounds_apart == round;
  pushed_ = true;
  last_pushed_ = round;
  // What is folded in gets a deadline of its own from here.
  if (receiving) {
    fold_in(view, *receiving, x, Clock::now(), stats);
  } else if (follows) {
    SegmentInbox previous(node_, kTag, round - options_.rounds_apart, true, options_.codec);
    fold_in(view, previous, x, Clock::now(), stats);
  }
  keep_weights_up(x);
  if (clip_) stats.named = clip_->end_round();
  return stats;
}

void PushSumGossip::push(const topology::View& view, uint64_t round, std::span<float> x,
                         Clock::time_point deadline, RoundStats& stats) {
  const size_t self = *view.index_of(node_.id());
  const auto out = topology::exponential_out_peers(view.size(), self, round, peers_);
  const float share = 1.0f / static_cast<float>(out.size() + 1);
  // The receiving side finishes the round (fold_in), not the sender.
  SegmentInbox sender(node_, kTag, round, /*finish=*/false);
  std::vector<bool> ready(out.size(), !pacing());
  for (uint32_t s = 0; s < segments_.size(); ++s) {
    const auto& seg = segments_[s];
    auto xs = x.subspan(seg.offset, seg.length);
    for (float& v : xs) v *= share;  // keep our share; push the same share
    weights_[s] *= share;
    const std::span<const float> pushed = outbound(s, round, xs, out.empty() ? "" : view.member(out[0]));
    const EncodedSegment data = feedback_.encode(seg.offset, pushed);  // one payload for every out-peer
    size_t failed = 0;
    for (size_t k = 0; k < out.size(); ++k) {
      const std::string& to = view.member(out[k]);
      // Pacing: push only once the receiver is in this round (or a whole
      // deadline has passed: it skips the segment anyway, and we keep it).
      if (!ready[k]) ready[k] = sender.await_ready(to, deadline, options_.stop, renudge());
      if (!ready[k] && options_.stop.stop_requested()) throw Aborted(node_.id(), "push-sum round");
      const size_t bytes = ready[k] ? sender.send(to, s, data, weights_[s], options_.segment_deadline) : 0;
      stats.segments_sent += bytes > 0;
      stats.bytes_sent += bytes;
      failed += bytes == 0;
    }
    if (failed < out.size()) feedback_.sent(seg.offset, pushed, data);
    if (failed > 0) {  // a push that could not leave stays with us: no mass is lost
      const float keep = static_cast<float>(1 + failed);
      for (float& v : xs) v *= keep;
      weights_[s] *= keep;
    }
  }
}

void PushSumGossip::fold_in(const topology::View& view, SegmentInbox& inbox, std::span<float> x,
                            Clock::time_point start, RoundStats& stats) {
  const auto deadline = start + deadlines_.current();
  const size_t self = *view.index_of(node_.id());
  const auto in = topology::exponential_in_peers(view.size(), self, inbox.round(), peers_);
  for (uint32_t s = 0; s < segments_.size(); ++s) {
    const auto& seg = segments_[s];
    for (size_t from : in) {
      const std::string& peer = view.member(from);
      auto msg = inbox.receive(peer, s, seg.length, deadline, options_.stop, renudge());
      if (!msg) {
        if (options_.stop.stop_requested()) throw Aborted(node_.id(), "push-sum round");
        ++stats.segments_skipped;
        if (clip_ && inbox.refused_non_finite(peer, s)) clip_->refused(peer);
        if (!inbox.refused_non_finite(peer, s)) deadlines_.missed(peer);
        continue;
      }
      deadlines_.arrived(peer, msg->arrived - start);
      const double w = msg->envelope.push_sum_weight();
      if (!msg->envelope.has_push_sum_weight() || !(w > 0.0) || !std::isfinite(w)) {
        node_.reject_log().reject(view.member(from), RejectReason::kSegment,
                                  "push-sum segment without a weight");
        ++stats.segments_skipped;
        continue;
      }
      if (attack_ && attack_->observes()) observe(peer, s, x.subspan(seg.offset, seg.length), *msg, w);
      if (clip_) {
        mix_clipped(peer, s, x.subspan(seg.offset, seg.length), *msg, w, stats);
        continue;
      }
      add_floats(x.data() + seg.offset, msg->payload.at(0).data(), seg.length);
      weights_[s] += msg->envelope.push_sum_weight();
      ++stats.segments_received;
      stats.bytes_received += seg.length * sizeof(float);
    }
  }
}

}  // namespace gossipd::protocol
