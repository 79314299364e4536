#include "protocol/gossip/crossover.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/group.h"
#include "protocol/collectives/ring.h"
#include "protocol/wire/errors.h"
#include "topology/derangement.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;

// x ← ½·(x + y), with y the received payload.
void average_into(std::span<float> x, const Message& msg) {
  add_floats(x.data(), msg.payload.at(0).data(), x.size());
  for (float& v : x) v *= 0.5f;
}

// Sends x (the parameters at `offset`) as segment s through the codec;
// an attacker (--inject-byzantine) sends what its attack makes of x.
size_t send_segment(SegmentInbox& inbox, ErrorFeedback& feedback, const std::string& to, uint32_t s,
                    size_t offset, std::span<const float> x, std::chrono::milliseconds timeout,
                    SegmentAttack* attack = nullptr) {
  if (attack) x = attack->apply(s, inbox.round(), x, to);
  const EncodedSegment data = feedback.encode(offset, x);
  const size_t bytes = inbox.send(to, s, data, std::nullopt, timeout);
  if (bytes > 0) feedback.sent(offset, x, data);
  return bytes;
}

// Mixes `peer`'s segment s (msg) into x: ½·(x + y), or ClippedGossip's
// clipped mix where `clip`; a named peer's is skipped as a lost one. An
// attacker that learns from what it receives (`attack`) sees it first.
void mix_segment(ClippedGossip* clip, SegmentAttack* attack, std::vector<float>& received,
                 const std::string& peer, uint32_t s, std::span<float> x, const Message& msg,
                 RoundStats& stats) {
  if (clip && clip->named(peer)) {
    ++stats.segments_skipped;
    return;
  }
  if (clip || (attack && attack->observes())) {
    received.resize(x.size());
    std::memcpy(received.data(), msg.payload.at(0).data(), x.size() * sizeof(float));
  }
  if (attack) attack->observe(peer, s, received, x);
  if (clip) {
    stats.segments_clipped += clip->mix(peer, s, x, received);
  } else {
    average_into(x, msg);
  }
  ++stats.segments_received;
  stats.bytes_received += x.size() * sizeof(float);
}

size_t self_index(const topology::View& view, const Node& node) {
  auto self = view.index_of(node.id());
  if (!self) throw ProtocolConfigError("node '" + node.id() + "' is not in the view it gossips over");
  return *self;
}

}  // namespace

RoundStats& RoundStats::operator+=(const RoundStats& o) {
  segments_sent += o.segments_sent;
  segments_received += o.segments_received;
  segments_skipped += o.segments_skipped;
  bytes_sent += o.bytes_sent;
  bytes_received += o.bytes_received;
  segments_clipped += o.segments_clipped;
  values_refused += o.values_refused;
  named.insert(named.end(), o.named.begin(), o.named.end());
  return *this;
}

CrossoverGossip::CrossoverGossip(Node& node, SegmentTable segments, GossipOptions options)
    : node_(node),
      segments_(std::move(segments)),
      options_(options),
      feedback_(options.codec),
      deadlines_(deadline_spec(options)) {
  register_segments(node_, segments_);
  if (options_.attack) attack_.emplace(*options_.attack);
  if (options_.clip) clip_ = std::make_unique<ClippedGossip>(*options_.clip);
}

RoundStats CrossoverGossip::run_round(const topology::View& view, uint64_t round, std::span<float> params) {
  check_segment_table(segments_, params.size());
  RoundStats stats;
  const size_t self = self_index(view, node_);
  if (view.size() < 2) return stats;
  const auto start = Clock::now();
  const auto deadline = start + deadlines_.current();
  SegmentInbox inbox(node_, kTag, round, true, options_.codec);
  std::vector<topology::Exchange> plan(segments_.size());
  for (uint32_t s = 0; s < segments_.size(); ++s) {
    plan[s] = *topology::crossover_exchange(view, self, options_.seed, round, s);
  }
  std::chrono::milliseconds renudge{0};
  if (options_.pace) {
    std::set<std::string> senders, receivers;
    for (const auto& p : plan) {
      senders.insert(view.member(p.receive_from));
      receivers.insert(view.member(p.send_to));
    }
    // "I finished the last round": to this round's senders (they may send
    // now) and to the last round's (what they sent me has arrived).
    const bool follows = has_last_ && last_round_ + options_.rounds_apart == round;
    std::set<std::string> notify = senders;
    if (follows) notify.insert(last_senders_.begin(), last_senders_.end());
    for (const auto& peer : notify) inbox.announce_ready(peer);
    renudge = std::max(std::chrono::milliseconds(1),
                       std::chrono::duration_cast<std::chrono::milliseconds>(deadlines_.current()) / 8);
    // Our last round's segments should have reached their receivers before
    // this round's go out behind them on the same link. Nobody repeats these
    // notes, so a lost one is waited for at most `renudge`.
    if (follows) {
      const auto until = std::min(deadline, Clock::now() + renudge);
      for (const auto& peer : last_receivers_) {
        if (!view.index_of(peer)) continue;  // left since
        if (!inbox.await_ready(peer, until, options_.stop, renudge) && options_.stop.stop_requested()) {
          throw Aborted(node_.id(), "crossover round");
        }
      }
    }
    has_last_ = true;
    last_round_ = round;
    last_senders_ = std::move(senders);
    last_receivers_ = std::move(receivers);
  }
  for (uint32_t s = 0; s < segments_.size(); ++s) {
    const auto& seg = segments_[s];
    const std::string& to = view.member(plan[s].send_to);
    // Not ready by then: sent anyway. A receiver that far behind finds it
    // waiting when it gets to this round (one never sent it would wait its
    // whole deadline for, and fall further behind); a gone one never reads it.
    if (options_.pace && !inbox.await_ready(to, deadline, options_.stop, renudge) &&
        options_.stop.stop_requested()) {
      throw Aborted(node_.id(), "crossover round");
    }
    const size_t bytes =
        send_segment(inbox, feedback_, to, s, seg.offset, params.subspan(seg.offset, seg.length),
                     options_.segment_deadline, attack_ ? &*attack_ : nullptr);
    stats.segments_sent += bytes > 0;
    stats.bytes_sent += bytes;
  }
  // The segments of peers not waited for (segment_deadlines.h) last: each
  // taken if it is in once the others are.
  std::vector<uint32_t> unwaited;
  for (uint32_t s = 0; s < segments_.size(); ++s) {
    const std::string& from = view.member(plan[s].receive_from);
    const auto wait = deadlines_.wait_for(from);
    if (wait == SegmentDeadlines::Duration::zero()) {
      unwaited.push_back(s);
      continue;
    }
    receive(inbox, from, s, start, start + wait, renudge, params, stats);
  }
  for (const uint32_t s : unwaited) {
    receive(inbox, view.member(plan[s].receive_from), s, start, std::nullopt, renudge, params, stats);
  }
  if (clip_) stats.named = clip_->end_round();
  return stats;
}

void CrossoverGossip::receive(SegmentInbox& inbox, const std::string& from, uint32_t s,
                              Clock::time_point start, std::optional<Clock::time_point> deadline,
                              std::chrono::milliseconds renudge, std::span<float> params, RoundStats& stats) {
  const auto& seg = segments_[s];
  auto msg = inbox.receive(from, s, seg.length, deadline.value_or(Clock::now()), options_.stop, renudge);
  if (!msg) {
    if (options_.stop.stop_requested()) throw Aborted(node_.id(), "crossover round");
    ++stats.segments_skipped;
    if (clip_ && inbox.refused_non_finite(from, s)) clip_->refused(from);
    if (deadline && !inbox.refused_non_finite(from, s)) deadlines_.missed(from);
    return;
  }
  deadlines_.arrived(from, msg->arrived - start);
  mix_segment(clip_.get(), attack_ ? &*attack_ : nullptr, received_, from, s,
              params.subspan(seg.offset, seg.length), *msg, stats);
}

HierarchicalCrossover::HierarchicalCrossover(Node& node, SegmentTable segments, GossipOptions options,
                                             topology::GroupSpread spread)
    : node_(node),
      segments_(std::move(segments)),
      options_(options),
      spread_(spread),
      feedback_(options.codec),
      averages_(options.codec),
      deadlines_(deadline_spec(options)) {
  register_segments(node_, segments_);
  if (options_.attack) attack_.emplace(*options_.attack);
  if (options_.clip) {
    clip_ = std::make_unique<ClippedGossip>(*options_.clip);
    robust_ = std::make_unique<RobustGroupMean>(*options_.clip);
    bound_ = std::make_unique<ShareBound>();
  }
}

size_t HierarchicalCrossover::group_average(Group& group, uint64_t round, std::span<float> params) {
  if (attack_) {  // what this member puts into its group: its attack on its replica
    std::vector<uint32_t> all(segments_.size());
    std::iota(all.begin(), all.end(), 0u);
    attack(all, round, params);
  }
  if (robust_) {
    robust_->run(group, params, params);
    return 0;
  }
  return averages_.average(group, params);
}

void HierarchicalCrossover::attack(std::span<const uint32_t> segments, uint64_t round,
                                   std::span<float> params) {
  if (!attack_) return;
  for (const uint32_t s : segments) {
    auto x = params.subspan(segments_[s].offset, segments_[s].length);
    const auto sent = attack_->apply(s, round, x);
    std::copy(sent.begin(), sent.end(), x.begin());
  }
}

std::map<std::string, PeerClipping> HierarchicalCrossover::clipping_peers() const {
  std::map<std::string, PeerClipping> peers;
  if (!clip_) return peers;
  for (const ClippedGossip* judge : {&robust_->judge(), static_cast<const ClippedGossip*>(clip_.get())}) {
    for (const auto& [peer, c] : judge->peers()) {
      PeerClipping& p = peers[peer];
      p.received += c.received;
      p.clipped += c.clipped;
      p.refused += c.refused;
      p.far_rounds = std::max(p.far_rounds, c.far_rounds);
      p.named = p.named || c.named;
    }
  }
  return peers;
}

RoundStats HierarchicalCrossover::run_round(const topology::View& view,
                                            const std::map<std::string, std::string>& labels, uint64_t round,
                                            std::span<float> params) {
  check_segment_table(segments_, params.size());
  self_index(view, node_);
  RoundStats stats;
  const topology::Groups groups(view, labels);
  const size_t g = *groups.group_of(node_.id());
  Group& group = group_for(groups, g, view.id());

  // The groups' collectives count what they send on the node; a round's
  // bytes are theirs and the segments'.
  const uint64_t collective_bytes = node_.payload_bytes_sent();
  stats.values_refused += group_average(group, round, params);  // (1) the group's average
  std::vector<std::string> owners(segments_.size());
  for (uint32_t s = 0; s < segments_.size(); ++s) owners[s] = groups.segment_owner(g, s, spread_, round);
  if (bound_)
    bound_->begin(group, segments_, params, *clip_, owners,
                  [this](const std::string& member) { return robust_->judge().named(member); });

  const std::vector<uint32_t> owned_segments = exchange(groups, view.id(), round, owners, params, stats);
  attack(owned_segments, round, params);
  std::vector<BlockRange> owned;
  for (const uint32_t s : owned_segments)
    owned.push_back({segments_[s].offset, segments_[s].offset + segments_[s].length});
  stats.values_refused +=
      averages_.share(group, params, owned, round,  // (3) every segment as its owner left it
                      bound_ ? bound_->slots() : std::span<float>{});
  if (bound_) stats.segments_clipped += bound_->clip(group, segments_, owners, params, *clip_);
  stats.bytes_sent += node_.payload_bytes_sent() - collective_bytes;
  if (clip_) {
    stats.named = robust_->end_round();
    for (auto& n : clip_->end_round())
      if (std::find(stats.named.begin(), stats.named.end(), n) == stats.named.end()) stats.named.push_back(n);
  }
  return stats;
}

std::vector<uint32_t> HierarchicalCrossover::exchange(const topology::Groups& groups, uint32_t view_id,
                                                      uint64_t round, std::span<const std::string> owners,
                                                      std::span<float> params, RoundStats& stats) {
  const auto start = Clock::now();
  const auto deadline = start + deadlines_.current();
  SegmentInbox inbox(node_, kTag, round, true, options_.codec);
  std::vector<std::optional<topology::GroupExchange>> plan(segments_.size());
  for (uint32_t s = 0; s < segments_.size(); ++s) {
    plan[s] = topology::inter_group_exchange(groups, view_id, node_.id(), options_.seed, round, s, spread_);
    if (!plan[s]) continue;
    const auto& seg = segments_[s];
    const size_t bytes = send_segment(inbox, feedback_, plan[s]->send_to, s, seg.offset,
                                      params.subspan(seg.offset, seg.length), options_.segment_deadline,
                                      attack_ ? &*attack_ : nullptr);
    stats.segments_sent += bytes > 0;
    stats.bytes_sent += bytes;
  }
  std::vector<uint32_t> owned;
  for (uint32_t s = 0; s < segments_.size(); ++s) {
    if (owners[s] != node_.id()) continue;
    if (plan[s]) receive_owned(inbox, plan[s]->receive_from, s, start, deadline, params, stats);
    owned.push_back(s);
  }
  return owned;
}

void HierarchicalCrossover::receive_owned(SegmentInbox& inbox, const std::string& from, uint32_t s,
                                          Clock::time_point start, Clock::time_point deadline,
                                          std::span<float> params, RoundStats& stats) {
  const auto& seg = segments_[s];
  auto msg = inbox.receive(from, s, seg.length, deadline, options_.stop);
  if (msg) {
    deadlines_.arrived(from, msg->arrived - start);
    mix_segment(clip_.get(), attack_ ? &*attack_ : nullptr, received_, from, s,
                params.subspan(seg.offset, seg.length), *msg, stats);
    return;
  }
  if (options_.stop.stop_requested()) throw Aborted(node_.id(), "hierarchical crossover round");
  if (clip_ && inbox.refused_non_finite(from, s)) clip_->refused(from);
  if (!inbox.refused_non_finite(from, s)) deadlines_.missed(from);
  ++stats.segments_skipped;
}

Group& HierarchicalCrossover::group_for(const topology::Groups& groups, size_t g, uint32_t view_id) {
  if (group_ && group_view_ == view_id && group_->members() == groups.members(g)) return *group_;
  CollectiveOptions copts;
  copts.timeout = options_.group_timeout;
  copts.stop = group_stop_;
  // A tag per (view, group): groups never mix, and a new view starts
  // fresh sequence numbers without meeting the old view's stale ones.
  const uint32_t tag = tags::range(tags::User::kHierarchicalGroup).at(uint64_t{view_id} << 8 | (g & 0xff));
  group_ = std::make_unique<Group>(node_, tag, groups.members(g), copts);
  group_view_ = view_id;
  averages_.reset();  // a new group: no start its members are known to share
  return *group_;
}

}  // namespace gossipd::protocol
