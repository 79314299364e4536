#include "daemon/worker/group_fold.h"

#include <algorithm>
#include <set>

#include "protocol/collectives.h"
#include "protocol/tags.h"

namespace gossipd::daemon {

float implicit_momentum(size_t groups) {
  return groups == 0 ? 0.0f : 1.0f - 1.0f / static_cast<float>(groups);
}

float auto_momentum(float target, float floor, size_t groups) {
  return std::max(floor, target - implicit_momentum(groups));
}

GroupFold::GroupFold(protocol::Node& node, Membership& membership, std::map<std::string, std::string> labels,
                     protocol::SegmentTable segments, protocol::GossipOptions gossip, MomentumRule momentum,
                     trainer::Trainer& trainer, WorkerState& state, MetricsRegistry& metrics)
    : node_(node),
      membership_(membership),
      labels_(std::move(labels)),
      segments_(segments),
      momentum_(momentum),
      trainer_(trainer),
      state_(state),
      folded_(metrics.counter("gossipd_groups_segments_folded_total",
                              "Segments from other compute groups folded into this group's model")),
      staleness_(metrics.gauge("gossipd_groups_staleness_rounds",
                               "Staleness of the last segment folded in: own step minus the sender's")),
      exchange_(node, std::move(segments), std::move(gossip)) {
  std::set<std::string> distinct;
  for (const auto& [id, label] : labels_) distinct.insert(label);
  groups_ = distinct.size();
  tune_momentum(groups_);
}

void GroupFold::tune_momentum(size_t groups) {
  implicit_ = implicit_momentum(groups);
  if (momentum_.automatic)
    trainer_.optimizer().set_momentum(auto_momentum(momentum_.target, momentum_.floor, groups));
}

std::vector<std::string> GroupFold::ring_of(const topology::View& view) const {
  const topology::Groups groups(view, labels_);
  return groups.members(*groups.group_of(node_.id()));
}

uint32_t GroupFold::ring_tag(const std::vector<std::string>& members) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids, each ended by a 0
  for (const auto& id : members) {
    for (char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h *= 1099511628211ull;
  }
  // Tag 0 of the range is the exchange's (AsyncGroupExchange::kTag).
  const auto range = protocol::tags::range(protocol::tags::User::kComputeGroups);
  return range.at(1 + h % (range.count - 1));
}

std::vector<uint32_t> GroupFold::owned(const protocol::Group& ring, size_t rank) const {
  std::vector<uint32_t> out;
  for (uint32_t s = rank; s < segments_.size(); s += static_cast<uint32_t>(ring.size())) out.push_back(s);
  return out;  // topology::GroupSpread::kSpread, as the exchange's
}

void GroupFold::after_update(protocol::Group& ring, uint64_t round) {
  std::vector<protocol::FoldIn> mine = exchange_.take();
  const std::vector<uint32_t> own = owned(ring, ring.rank());
  // A copy of a segment this member no longer owns (its ring changed) is dropped.
  std::erase_if(mine, [&](const protocol::FoldIn& f) {
    return std::find(own.begin(), own.end(), f.segment) == own.end();
  });
  std::vector<float> flags(ring.size(), 0.0f);
  flags[ring.rank()] = mine.empty() ? 0.0f : 1.0f;
  if (ring.size() > 1) protocol::Allreduce(ring, flags).run();
  report(ring, round, mine);
  if (std::any_of(flags.begin(), flags.end(), [](float f) { return f > 0; }))
    share(ring, flags, std::move(mine));
  fit_.add(trainer_.model().params(), trainer_.model().grads(), trainer_.current_lr(),
           trainer_.optimizer().options().weight_decay);
  const topology::View view = membership_.view_at(round);
  tune_momentum(topology::Groups(view, labels_).count());
  exchange_.offer(view, labels_, round, trainer_.model().params());
}

void GroupFold::share(protocol::Group& ring, const std::vector<float>& flags,
                      std::vector<protocol::FoldIn> mine) {
  auto params = trainer_.model().params();
  std::vector<size_t> counts(ring.size(), 0);
  size_t total = 0, at = 0;
  for (size_t r = 0; r < ring.size(); ++r) {
    if (flags[r] > 0) {
      for (uint32_t s : owned(ring, r)) counts[r] += segments_[s].length;
    }
    if (r < ring.rank()) at += counts[r];
    total += counts[r];
  }
  std::vector<float> buffer(total);
  for (const auto& f : mine) {  // x_s <- x_s/2 + y_s/2 in place; the rest of the owned segments as they are
    auto x = params.subspan(segments_[f.segment].offset, segments_[f.segment].length);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * x[i] + 0.5f * f.values[i];
  }
  if (counts[ring.rank()] > 0) {
    for (uint32_t s : owned(ring, ring.rank())) {
      const auto x = params.subspan(segments_[s].offset, segments_[s].length);
      std::copy(x.begin(), x.end(), buffer.begin() + static_cast<std::ptrdiff_t>(at));
      at += x.size();
    }
  }
  if (ring.size() > 1) protocol::Allgather(ring, buffer, counts).run();
  size_t pos = 0;
  for (size_t r = 0; r < ring.size(); ++r) {
    if (counts[r] == 0) continue;
    for (uint32_t s : owned(ring, r)) {
      const auto& seg = segments_[s];
      std::copy_n(buffer.begin() + static_cast<std::ptrdiff_t>(pos), seg.length,
                  params.begin() + static_cast<std::ptrdiff_t>(seg.offset));
      pos += seg.length;
    }
  }
}

void GroupFold::report(const protocol::Group& ring, uint64_t round,
                       const std::vector<protocol::FoldIn>& folded) {
  double last = 0;
  for (const auto& f : folded) {
    const int64_t staleness = static_cast<int64_t>(round) - static_cast<int64_t>(f.sender_step);
    staleness_sum_ += static_cast<double>(staleness);
    staleness_max_ = std::max(staleness_max_, staleness);
    last = static_cast<double>(staleness);
  }
  folds_ += folded.size();
  folded_.add(static_cast<double>(folded.size()));
  if (!folded.empty()) staleness_.set(last);
  const protocol::RoundStats x = exchange_.stats();
  const uint64_t rounds = exchange_.rounds();
  state_.update([&](proto::Status& s) {
    auto* g = s.mutable_groups();
    g->set_groups(static_cast<uint32_t>(groups_));
    g->set_group(static_cast<uint32_t>(std::stoul(labels_.at(node_.id()).substr(2))));
    g->clear_group_members();
    for (const auto& m : ring.members()) g->add_group_members(m);
    g->set_exchange_rounds(rounds);
    g->set_segments_folded(folds_);
    g->set_segments_skipped(x.segments_skipped);
    g->set_segments_superseded(exchange_.superseded());
    if (!folded.empty()) g->set_staleness_last(last);
    g->set_staleness_mean(folds_ ? staleness_sum_ / static_cast<double>(folds_) : 0.0);
    g->set_staleness_max(staleness_max_);
    g->set_momentum(trainer_.optimizer().options().momentum);
    g->set_implicit_momentum(implicit_);
    g->set_momentum_auto(momentum_.automatic);
    if (const auto mu = fit_.momentum()) g->set_fitted_momentum(*mu);
    s.set_bytes_sent(x.bytes_sent);
    s.set_bytes_received(x.bytes_received);
    s.set_segments_skipped(x.segments_skipped);
  });
}

}  // namespace gossipd::daemon
