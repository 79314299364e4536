#include "daemon/modes/groups/groups_report.h"

#include "daemon/modes/groups/momentum_rule.h"
#include "daemon/observe/message_json.h"

namespace gossipd::daemon {

GroupsReport::GroupsReport(const protocol::Node& node, WorkerState& state, MetricsRegistry& metrics,
                           const ShardStore& store, const ShardClient& client, GroupsReportInfo info)
    : node_(node),
      state_(state),
      store_(store),
      client_(client),
      info_(std::move(info)),
      applied_(metrics.gauge("gossipd_groups_pushes_applied_total",
                             "Groups' gradients this member applied to the parameter shards it owns")),
      refused_(
          metrics.gauge("gossipd_groups_pushes_refused_total",
                        "Pushes this member refused: repeats, not its shard, wrong size, a named pusher's")),
      staleness_mean_(
          metrics.gauge("gossipd_groups_staleness_mean",
                        "Mean staleness of the pushes applied: other groups' updates since the pull")) {
  for (size_t k = 0; k < kStalenessBuckets; ++k) {
    const std::string tau = k + 1 < kStalenessBuckets ? std::to_string(k) : std::to_string(k) + "+";
    staleness_.push_back(&metrics.gauge("gossipd_groups_staleness_pushes",
                                        "Pushes applied with this staleness (tau, the last bucket and above)",
                                        {{"tau", tau}}));
  }
}

void GroupsReport::at_step(const protocol::Group& ring, size_t groups_in_view) {
  ring_ = ring.members();
  groups_in_view_ = groups_in_view;
  publish();
}

void GroupsReport::publish() {
  const ShardStats x = store_.stats();
  applied_.set(static_cast<double>(x.applied));
  refused_.set(static_cast<double>(x.duplicate + x.not_owned + x.mis_sized + x.refused));
  staleness_mean_.set(x.staleness_mean());
  for (size_t k = 0; k < kStalenessBuckets; ++k) staleness_[k]->set(static_cast<double>(x.staleness[k]));
  state_.update([&](proto::Status& s) {
    update_mode_status<proto::GroupsStatus>(s, [&](proto::GroupsStatus& status) { fill(status, x); });
    s.set_bytes_sent(node_.payload_bytes_sent());
  });
}

void GroupsReport::fill(proto::GroupsStatus& status, const ShardStats& x) const {
  proto::GroupsStatus* g = &status;
  g->set_groups(static_cast<uint32_t>(info_.groups));
  g->set_group(static_cast<uint32_t>(std::stoul(info_.label.substr(2))));
  g->clear_group_members();
  for (const auto& m : ring_) g->add_group_members(m);
  g->set_staleness_mean(x.staleness_mean());
  g->set_staleness_max(static_cast<int64_t>(x.staleness_max));
  g->set_momentum(store_.momentum());
  g->set_implicit_momentum(implicit_momentum(groups_in_view_));
  g->set_momentum_auto(info_.momentum_auto);
  if (const auto mu = x.fit.momentum()) g->set_fitted_momentum(*mu);
  g->clear_shards_owned();
  for (uint32_t j : x.owned) g->add_shards_owned(j);
  g->set_pushes_applied(x.applied);
  g->set_pushes_duplicate(x.duplicate);
  g->set_pushes_not_owned(x.not_owned);
  g->set_pushes_mis_sized(x.mis_sized);
  g->set_shards_seeded(x.seeded_later);
  g->set_updates_lost(x.lost);
  g->clear_staleness_histogram();
  for (uint64_t n : x.staleness) g->add_staleness_histogram(n);
  g->set_push_retries(client_.resends());
  g->set_pushes_clipped(x.clipped);
  g->set_pushes_refused(x.refused);
}

}  // namespace gossipd::daemon
