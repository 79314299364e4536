// --evict-byzantine: a member that --robust named Byzantine leaves the view.
// Each member whose defence names a peer accuses it; the accusation rides
// on the probes as SWIM's updates do, carrying every accuser of that peer
// known to the sender, and each member that learns of a new accuser passes
// the union on. A member that holds `quorum` distinct accusers of a peer
// takes it out of its view and refuses it (HELLO, member lists, updates)
// for the rest of the run. The quorum is the defence against one member
// accusing the honest: below it an accusation only travels. What it does
// not defend against: membership's words are not signed, so a member that
// relays an accusation could add accusers' names to it, as it could say
// DEAD of a live member today (daemon/README.md, "Members that cannot be trusted").
#include <spdlog/spdlog.h>

#include "daemon/cluster/membership.h"  // the class whose evictions these are

namespace gossipd::daemon {

void Membership::evict_byzantine(size_t quorum) {
  std::lock_guard lock(mu_);
  evict_quorum_ = quorum;
}

void Membership::accuse(const std::string& id) {
  std::lock_guard lock(mu_);
  own_accusations_.push_back(id);  // taken on the membership thread, which alone drops
}

size_t Membership::accusers_of(const std::string& id) const {
  std::lock_guard lock(mu_);
  return accusations_.of(id).size();
}

void Membership::take_own_accusations() {
  std::vector<std::pair<std::string, std::string>> gone;  // id, why
  {
    std::lock_guard lock(mu_);
    for (const std::string& id : own_accusations_) {
      if (std::string why = accused_by(id, self_.id()); !why.empty()) gone.emplace_back(id, std::move(why));
    }
    own_accusations_.clear();
  }
  for (const auto& [id, why] : gone) {
    byzantine_evicted_.add();
    drop(id, why);
  }
}

std::string Membership::take_accusation(const proto::MemberUpdate& u) {
  std::string why;
  for (const std::string& accuser : u.accusers()) {
    if (const std::string now = accused_by(u.member().id(), accuser); !now.empty()) why = now;
  }
  return why;
}

std::string Membership::accused_by(const std::string& id, const std::string& accuser) {
  if (id.empty() || accuser.empty() || !accusations_.add(id, accuser)) return "";
  queue_accusation(id);
  const auto& accusers = accusations_.of(id);
  if (evict_quorum_ == 0 || id == self_.id() || accusations_.banned(id) || accusers.size() < evict_quorum_)
    return "";
  accusations_.ban(id);
  std::string names;
  for (const std::string& a : accusers) names += (names.empty() ? "" : ", ") + a;
  return "evicted as Byzantine: named by " + names + " (--evict-byzantine, a quorum of " +
         std::to_string(evict_quorum_) + "); it is refused should it come back in this run";
}

void Membership::queue_accusation(const std::string& id) {
  proto::MemberUpdate u;
  u.set_kind(proto::MemberUpdate::ACCUSED);
  u.mutable_member()->set_id(id);
  for (const std::string& a : accusations_.of(id)) u.add_accusers(a);
  updates_.add(u);
}

}  // namespace gossipd::daemon
