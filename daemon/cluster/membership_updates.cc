// What the updates piggybacked on probes do to a member's table: joins
// learned, suspicions taken up or refuted, evictions and leaves applied
// (membership.h). A word about a member counts only with an incarnation at
// least as high as the one this member holds; about an entry of an earlier
// join (since_round), or one seen leaving, not at all.
#include <spdlog/spdlog.h>

#include "daemon/cluster/membership.h"  // the class whose updates these are

namespace gossipd::daemon {

void Membership::apply(const proto::Probe& probe) {
  bool changed = false, labelled = false;
  struct Gone {
    std::string id, why;
    bool byzantine = false;  // --evict-byzantine (not evicted for silence)
  };
  std::vector<Gone> gone;
  {
    std::lock_guard lock(mu_);
    for (const auto& u : probe.updates()) {
      const proto::Member& m = u.member();
      if (u.kind() == proto::MemberUpdate::ACCUSED) {
        if (std::string why = take_accusation(u); !why.empty())
          gone.push_back({m.id(), std::move(why), true});
        continue;
      }
      if (m.id() == self_.id()) {
        apply_about_self(u);
        continue;
      }
      auto it = entries_.find(m.id());
      if (u.kind() == proto::MemberUpdate::DEAD && it != entries_.end() &&
          m.since_round() == it->second.since_round && m.incarnation() >= it->second.incarnation) {
        queue_update(proto::MemberUpdate::DEAD, m.id());  // passed on before the entry goes
        gone.push_back(
            {m.id(), "evicted (suspected by a peer, and no word from it within the failure timeout)"});
        continue;
      }
      const bool had_label = it != entries_.end() && !it->second.group.empty();
      if (apply_one(u)) changed = true;
      it = entries_.find(m.id());
      if (!had_label && it != entries_.end() && !it->second.group.empty()) labelled = true;
    }
  }
  for (const Gone& g : gone) {
    (g.byzantine ? byzantine_evicted_ : evictions_).add();
    drop(g.id, g.why, !g.byzantine);
  }
  if (changed)
    publish();
  else if (labelled)
    changed_.notify();
}

// A suspicion of this member (or word of its death, which a member that
// still runs takes as one) is refuted with a higher incarnation.
bool Membership::apply_about_self(const proto::MemberUpdate& u) {
  if (u.kind() == proto::MemberUpdate::ALIVE) return false;
  if (u.member().incarnation() < self_.incarnation() || u.member().since_round() != self_.since_round()) {
    stale_updates_.add();  // already refuted, or about an earlier join of this id
    return false;
  }
  self_.set_incarnation(u.member().incarnation() + 1);
  refutations_.add();
  adjust_health(+1);  // others did not hear it in time
  queue_update(proto::MemberUpdate::ALIVE, self_.id());
  spdlog::info("node '{}': refutes a suspicion of itself (incarnation {})", node_.id(), self_.incarnation());
  return false;
}

bool Membership::apply_one(const proto::MemberUpdate& u) {
  const proto::Member& m = u.member();
  auto it = entries_.find(m.id());
  if (it == entries_.end()) {
    // A member not known: only its ALIVE brings it in (as a member list would).
    if (u.kind() != proto::MemberUpdate::ALIVE || departed_.left(m.id(), m.since_round()) ||
        accusations_.banned(m.id())) {
      stale_updates_.add();
      return false;
    }
    if (entries_.size() + 1 >= options_.max_members || !connect(m.id(), m.endpoint())) return false;
    entries_[m.id()] = Entry::of(m);
    admission_.forget(m.id());
    ++changes_;
    updates_.add(u);
    spdlog::info("node '{}': member '{}' enters the view at round {}", node_.id(), m.id(), m.since_round());
    return true;
  }
  Entry& e = it->second;
  if (m.since_round() != e.since_round || m.incarnation() < e.incarnation) {
    stale_updates_.add();  // about another join of the id, or older than what this member holds
    return false;
  }
  if (u.kind() == proto::MemberUpdate::ALIVE) {
    if (e.group.empty() && !m.group().empty()) e.group = m.group();
    if (m.incarnation() == e.incarnation) return false;
    e.incarnation = m.incarnation();
    suspicions_.refute(m.id());
    updates_.add(u);
    return false;
  }
  if (u.kind() == proto::MemberUpdate::SUSPECT &&
      (!suspicions_.suspected(m.id()) || m.incarnation() > e.incarnation)) {
    e.incarnation = m.incarnation();
    suspicions_.mark(m.id(), Clock::now() + options_.failure_timeout);  // a suspect's first deadline holds
    updates_.add(u);
  }
  return false;
}

}  // namespace gossipd::daemon
