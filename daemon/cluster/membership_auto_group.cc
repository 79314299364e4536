// --group auto (auto_group.h): once the worker calls find_group (every
// member is up), each period PINGs of its own go to the peers not yet
// measured (bare for their delays, then padded for the near ones' rates,
// their ACKs as padded), the ACKs give the round trips, and once every peer is
// measured (or did not answer) the member takes its label and tells the
// others as an ALIVE update of itself. Until then labels_known is false, so
// a hierarchical worker does not start its rounds.
#include <spdlog/spdlog.h>

#include <sstream>

#include "daemon/cluster/membership.h"  // the class whose part this is

namespace gossipd::daemon {

void Membership::find_group() {
  std::lock_guard lock(mu_);
  if (options_.auto_group_near.count() == 0 || !self_.group().empty()) return;
  measuring_ = true;
}

void Membership::measure_round_trips(Clock::time_point now) {
  std::vector<RoundTrips::Ping> pings;
  std::string label;
  {
    std::lock_guard lock(mu_);
    if (!measuring_) return;
    label = take_group_if_settled();
    if (label.empty()) pings = round_trips_.due(peer_ids(), now);
  }
  if (!label.empty()) group_taken(label);
  for (const auto& p : pings) send_probe({proto::PING, p.peer, p.seq, "", p.padding});
}

bool Membership::on_round_trip(const protocol::Message& m) {
  std::string label;
  {
    std::lock_guard lock(mu_);
    if (!round_trips_.acked(m.envelope.probe().seq(), m.envelope.sender(), Clock::now())) return false;
    if (measuring_) label = take_group_if_settled();
  }
  if (!label.empty()) group_taken(label);
  return true;
}

void Membership::group_taken(const std::string& label) {
  delegate_.group_taken(label);
  changed_.notify();  // labels_known may hold now
}

namespace {

std::string ms(RoundTrips::Clock::duration d) {
  std::ostringstream s;
  s.precision(3);
  s << std::chrono::duration<double, std::milli>(d).count() << " ms";
  return s.str();
}

}  // namespace

std::string Membership::take_group_if_settled() {
  if (!round_trips_.settled(peer_ids())) return "";
  std::map<std::string, std::string> labels;
  for (const auto& [id, e] : entries_) labels[id] = e.group;
  const auto trips = round_trips_.least();
  const GroupChoice c = choose_group(self_.id(), trips, labels, options_.auto_group_near);
  self_.set_group(c.label);
  measuring_ = false;
  queue_update(proto::MemberUpdate::ALIVE, self_.id());  // the peers learn the label
  std::ostringstream near;
  for (const auto& id : c.near) near << ", " << id << ' ' << ms(trips.at(id));
  const std::string within = c.near.empty() ? "none" : near.str().substr(2);
  spdlog::info("node '{}': --group auto: group '{}' (within {} ms: {}; {} of {} peers answered)", node_.id(),
               c.label, options_.auto_group_near.count(), within, trips.size(), entries_.size());
  return c.label;
}

}  // namespace gossipd::daemon
