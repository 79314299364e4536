// A partition's two sides finding each other again. Each side evicts the
// other after the failure timeout and trains on. A member keeps the
// endpoints of the members it evicted for silence (for kReunionWindow:
// PartedMembers, parted_members.h) and each period sends one of them a
// REUNION. One that gets a REUNION from a
// member it evicted answers with its part of the cluster as it is then (its
// ids, how many, the lowest): a REUNION sent during the partition waits in a
// queue and arrives when the links come back, describing the part as it was,
// so only answers decide. A member that gets an answer from a part that
// shares no member with its own view (one that does is a view lagging
// behind, or a member evicted falsely, which SWIM settles) compares the two
// parts: the larger goes on (of two as large, the one holding the lower id);
// every member of the other is cut off (on_lost, with the endpoints of the
// part that goes on), as a member cut off alone is, and enters that part
// again or ends: no part trains on as if it were the cluster.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/cluster/membership.h"  // the class whose reunion side this is
#include "protocol/transport/lanes.h"

namespace gossipd::daemon {
namespace {

// The transport's name for the connection a REUNION goes out on (the member
// is no peer any more): a lane, which the fault layer gives the peer's link.
std::string reunion_peer(const std::string& id) { return protocol::lane_name(protocol::Lane::kReunion, id); }

}  // namespace

std::string Membership::lowest_id() const {
  std::string lowest = self_.id();
  if (!entries_.empty()) lowest = std::min(lowest, entries_.begin()->first);  // a sorted map
  return lowest;
}

void Membership::seek_reunion(Clock::time_point now) {
  std::string to, endpoint;
  std::vector<std::string> forgotten;
  {
    std::lock_guard lock(mu_);
    if (!armed_ || lost_) return;
    forgotten = parted_.forget(now, [this](const std::string& id) { return entries_.count(id) > 0; });
    if (const auto next = parted_.next()) {
      to = next->id;
      endpoint = next->endpoint;
    }
  }
  for (const auto& id : forgotten) node_.transport().disconnect(reunion_peer(id));
  if (!to.empty()) send_reunion(to, endpoint, false);
}

void Membership::send_reunion(const std::string& to, const std::string& endpoint, bool answer) {
  proto::Envelope env = node_.envelope(proto::REUNION);
  {
    std::lock_guard lock(mu_);
    env.mutable_reunion()->set_members(static_cast<uint32_t>(entries_.size() + 1));
    env.mutable_reunion()->set_lowest(lowest_id());
    env.mutable_reunion()->set_answer(answer);
    if (answer) {
      env.mutable_reunion()->add_ids(self_.id());
      for (const auto& [id, e] : entries_) env.mutable_reunion()->add_ids(id);
    }
  }
  try {
    node_.transport().connect(reunion_peer(to), endpoint);
    node_.transport().send(reunion_peer(to), {protocol::envelope_frame(env)}, std::chrono::milliseconds(0));
  } catch (const std::exception& e) {
    // Unreachable still (the partition holds), or its queue is full: the next period tries again.
    spdlog::debug("node '{}': REUNION to '{}' not sent: {}", node_.id(), to, e.what());
  }
}

void Membership::on_reunion(const protocol::Message& m) {
  const std::string& from = m.envelope.sender();
  const proto::Reunion& theirs = m.envelope.reunion();
  std::string why, endpoint;
  std::vector<std::string> contacts;  // the part that goes on: the one that answered first
  {
    std::lock_guard lock(mu_);
    if (!armed_ || lost_) return;
    const auto parted = parted_.endpoint(from);
    if (!parted || entries_.count(from)) {
      // Only a member this one evicted for silence speaks for another part.
      stale_updates_.add();
      return;
    }
    reunions_.add();
    endpoint = *parted;
    if (theirs.answer()) why = yield_to(from, theirs, endpoint);
    if (!why.empty()) {
      lost_ = true;
      contacts = parted_.contacts(from);
    }
  }
  if (!theirs.answer()) {
    send_reunion(from, endpoint, true);  // this part as it is now
    return;
  }
  if (why.empty()) return;  // this part goes on; the other learns it from its own REUNIONs' answers
  spdlog::error("node '{}': {}", node_.id(), why);
  if (options_.on_lost) options_.on_lost(why, contacts);
}

std::string Membership::yield_to(const std::string& from, const proto::Reunion& theirs,
                                 const std::string& endpoint) const {
  const auto mine = static_cast<uint32_t>(entries_.size() + 1);
  const std::string lowest = lowest_id();
  for (const auto& id : theirs.ids()) {
    if (id == self_.id() || entries_.count(id)) return "";  // not the other side: one view lags the other
  }
  if (mine > theirs.members() || (mine == theirs.members() && lowest < theirs.lowest())) return "";
  return "met the cluster's other part after a partition: '" + from + "' is one of its " +
         std::to_string(theirs.members()) + " members (this part: " + std::to_string(mine) + ", lowest id '" +
         lowest + "'), and the " +
         (mine == theirs.members() ? "part holding the lower id '" + theirs.lowest() + "'" : "larger part") +
         " goes on; enter it through " + endpoint + " with its state";
}

}  // namespace gossipd::daemon
