#include "daemon/cluster/membership.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Membership::Membership(protocol::Node& node, proto::Member self,
                       const std::map<std::string, std::string>& peers, MembershipOptions options,
                       MembershipDelegate& delegate, MetricsRegistry& metrics)
    : Membership(
          node, std::move(self),
          [&] {
            proto::MemberList list;  // everyone from round 0, labels not known yet
            for (const auto& [id, endpoint] : peers) {
              proto::Member* m = list.add_members();
              m->set_id(id);
              m->set_endpoint(endpoint);
            }
            return list;
          }(),
          options, delegate, metrics) {}

Membership::Membership(protocol::Node& node, proto::Member self, const proto::MemberList& admitted,
                       MembershipOptions options, MembershipDelegate& delegate, MetricsRegistry& metrics)
    : node_(node),
      self_(std::move(self)),
      options_(options),
      delegate_(delegate),
      members_gauge_(metrics.gauge("gossipd_members", "Members in the current view")),
      evictions_(
          metrics.counter("gossipd_members_evicted_total", "Members evicted after the failure timeout")),
      joins_(
          metrics.counter("gossipd_joins_admitted_total", "Joiners this member admitted as their contact")),
      prober_(std::hash<std::string>{}(self_.id())),
      rng_(std::hash<std::string>{}(self_.id()) ^ 0x9e3779b97f4a7c15ull),
      suspected_(
          metrics.counter("gossipd_members_suspected_total",
                          "Members this member suspected (a probe and its indirect probes unanswered)")),
      refutations_(
          metrics.counter("gossipd_suspicions_refuted_total", "Suspicions of this member it refuted")),
      indirect_probes_(metrics.counter("gossipd_indirect_probes_total",
                                       "Probes retried through other members (PING_REQ) after no ACK")),
      stale_updates_(
          metrics.counter("gossipd_member_updates_stale_total",
                          "Membership updates dropped: older than the incarnation held, about another "
                          "join of the id, or about a member not known or gone")),
      reunions_(metrics.counter("gossipd_reunions_total",
                                "REUNIONs taken from members this one evicted (a partition's other side)")),
      shares_abandoned_(metrics.counter("gossipd_state_shares_abandoned_total",
                                        "Shares of the state this member began to stream to a joiner and "
                                        "gave up: the joiner stopped reading or asked for a span the "
                                        "state does not hold")),
      health_gauge_(metrics.gauge("gossipd_member_local_health",
                                  "Lifeguard's local health score: 0 healthy; the protocol period stretches "
                                  "by (1 + score)")),
      byzantine_evicted_(metrics.counter("gossipd_byzantine_evicted_total",
                                         "Members this one took out of its view as Byzantine: a quorum "
                                         "of members named them (--evict-byzantine)")) {
  for (const auto& m : admitted.members()) {
    if (m.id() == self_.id()) {
      self_.set_since_round(m.since_round());
      continue;
    }
    entries_[m.id()] = Entry::of(m);
    connect(m.id(), m.endpoint());
  }
  // Everyone learns this member's entry (its label) from the probes.
  queue_update(proto::MemberUpdate::ALIVE, self_.id());
  last_round_ = self_.since_round() > 0 ? self_.since_round() - 1 : 0;
  start();
}

void Membership::start() {
  if (!self_.group().empty()) delegate_.group_taken(self_.group());
  const auto now = Clock::now();
  next_tick_ = heard_ = now;
  // The first exchange at a random point of the period: members started
  // together would otherwise all send their whole tables at once (1,000
  // tables of 1,000 members in a second stalled the bench's cluster into
  // evicting itself).
  next_push_pull_ = now + std::chrono::duration_cast<Clock::duration>(
                              push_pull_period() * std::uniform_real_distribution<double>(0.0, 1.0)(rng_));
  if (self_.since_round() > 0) {
    // A joiner holds its admitter's table of the moment it was admitted. A
    // member admitted meanwhile through another may be missing from it, its
    // announcement passed on before anyone knew this one (seen after a
    // partition, when a half rejoins at once): its first exchange comes after
    // 2-4 protocol periods, when the others know it, not up to a whole
    // interval later.
    next_push_pull_ = std::min(
        next_push_pull_,
        now + std::chrono::duration_cast<Clock::duration>(
                  options_.heartbeat_interval * std::uniform_real_distribution<double>(2.0, 4.0)(rng_)));
  }
  publish();
  shares_.start();
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

Membership::~Membership() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  shares_.stop();
}

topology::View Membership::view_locked(uint64_t round) const {
  // In id order (the hash's): the table is, and this member goes in its place.
  std::vector<std::pair<std::string, uint64_t>> members;
  members.reserve(entries_.size() + 1);
  bool self_placed = false;
  for (const auto& [id, e] : entries_) {
    if (!self_placed && self_.id() < id) {
      members.emplace_back(self_.id(), self_.since_round());
      self_placed = true;
    }
    if (e.since_round <= round) members.emplace_back(id, e.since_round);
  }
  if (!self_placed) members.emplace_back(self_.id(), self_.since_round());
  std::vector<std::string> ids;
  ids.reserve(members.size());
  for (const auto& m : members) ids.push_back(m.first);
  return topology::View(topology::view_hash(members), std::move(ids));
}

topology::View Membership::view_at(uint64_t round) const {
  std::lock_guard lock(mu_);
  return view_locked(round);
}

topology::View Membership::view() const {
  std::lock_guard lock(mu_);
  return view_locked(last_round_ + 1);
}

std::map<std::string, std::string> Membership::labels() const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> out{{self_.id(), self_.group()}};
  for (const auto& [id, e] : entries_) {
    if (!e.group.empty()) out[id] = e.group;
  }
  return out;
}

bool Membership::labels_known(uint64_t round) const {
  std::lock_guard lock(mu_);
  if (self_.group().empty()) return false;  // --group auto: not measured yet
  return std::all_of(entries_.begin(), entries_.end(), [&](const auto& kv) {
    return kv.second.since_round > round || !kv.second.group.empty();
  });
}

bool Membership::knows(const std::string& id) const {
  std::lock_guard lock(mu_);
  return id == self_.id() || entries_.count(id) > 0;
}

uint64_t Membership::since_round(const std::string& id) const {
  std::lock_guard lock(mu_);
  if (id == self_.id()) return self_.since_round();
  auto it = entries_.find(id);
  return it == entries_.end() ? 0 : it->second.since_round;
}

void Membership::arm() {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  heard_ = now;
  armed_at_ = now;
  suspicions_.clear();  // start-up's silence is not held against anyone
  armed_ = true;
  node_.arm_faults();  // injected loss starts with training, not during start-up
}

void Membership::set_join_policy(JoinPolicy policy) {
  std::lock_guard lock(mu_);
  admission_.set_policy(std::move(policy));
}

proto::MemberList Membership::members() const {
  std::lock_guard lock(mu_);
  return table();
}

proto::MemberList Membership::table() const {
  proto::MemberList list;
  list.set_round(last_round_);
  *list.add_members() = self_;
  for (const auto& [id, e] : entries_) {
    proto::Member* m = list.add_members();
    m->set_id(id);
    m->set_endpoint(e.endpoint);
    m->set_group(e.group);
    m->set_since_round(e.since_round);
    m->set_incarnation(e.incarnation);
  }
  return list;
}

void Membership::publish() {
  topology::View v;
  uint32_t changes = 0;
  {
    std::lock_guard lock(mu_);
    v = view_locked(last_round_ + 1);
    changes = changes_;
    published_view_ = v.id();
  }
  members_gauge_.set(static_cast<double>(v.size()));
  delegate_.view_published(v, changes);
  changed_.notify();
}

void Membership::drop(const std::string& id, const std::string& why, bool evicted) {
  size_t left = 0;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    departed_.record(id, it->second.since_round);
    suspicions_.refute(id);
    if (evicted) parted_.evicted(id, it->second.endpoint, Clock::now());
    entries_.erase(it);
    ++changes_;
    left = entries_.size() + 1;
  }
  node_.remove_peer(id);
  spdlog::warn("node '{}': member '{}' {}; {} members remain", node_.id(), id, why, left);
  publish();
}

void Membership::send_list(const std::string& to, const proto::MemberList& list) {
  proto::Envelope env = node_.envelope(proto::MEMBER_LIST);
  *env.mutable_member_list() = list;
  try {
    node_.transport().send(to, {protocol::envelope_frame(env)}, std::chrono::milliseconds(100));
  } catch (const std::exception& e) {
    spdlog::debug("node '{}': member list to '{}' not sent: {}", node_.id(), to, e.what());
  }
}

void Membership::merge(const proto::MemberList& list) {
  bool changed = false, labelled = false;
  {
    std::lock_guard lock(mu_);
    for (const auto& m : list.members()) {
      if (m.id() == self_.id() || m.id().empty()) continue;
      auto it = entries_.find(m.id());
      if (it != entries_.end()) {
        Entry& e = it->second;
        if (m.since_round() > e.since_round) {  // a newer incarnation (it restarted and rejoined)
          departed_.record(m.id(), e.since_round);
          e = Entry::of(m);
          suspicions_.refute(m.id());
          connect(m.id(), m.endpoint());
          ++changes_;
          changed = true;
          continue;
        }
        if (m.since_round() < e.since_round) continue;
        if (m.incarnation() > e.incarnation) {
          e.incarnation = m.incarnation();
          suspicions_.refute(m.id());
        }
        if (e.group.empty() && !m.group().empty()) {
          e.group = m.group();
          labelled = true;
        }
        continue;
      }
      if (departed_.left(m.id(), m.since_round()) || accusations_.banned(m.id())) continue;  // saw it leave
      if (entries_.size() + 1 >= options_.max_members) {
        spdlog::warn("node '{}': member '{}' not taken into the view: it holds --max-members {} already",
                     node_.id(), m.id(), options_.max_members);
        continue;
      }
      if (!connect(m.id(), m.endpoint())) continue;
      entries_[m.id()] = Entry::of(m);
      admission_.forget(m.id());
      ++changes_;
      changed = true;
      spdlog::info("node '{}': member '{}' enters the view at round {}", node_.id(), m.id(), m.since_round());
    }
  }
  if (changed)
    publish();
  else if (labelled)
    changed_.notify();
}

bool Membership::connect(const std::string& id, const std::string& endpoint) {
  try {
    node_.add_peer(id, endpoint);
    return true;
  } catch (const std::exception& e) {
    spdlog::warn("node '{}': cannot connect to '{}' at {}: {}", node_.id(), id, endpoint, e.what());
    return false;
  }
}

void Membership::handle(const protocol::Message& m) {
  const auto& env = m.envelope;
  {
    // Word from a member is word that it runs: this member's suspicion of
    // it ends (its refutation may still be on its way, queued behind data).
    // Not a REUNION: one comes from a member that evicted this one.
    std::lock_guard lock(mu_);
    if (auto it = entries_.find(env.sender()); it != entries_.end() && env.type() != proto::REUNION) {
      heard_ = Clock::now();
      suspicions_.refute(env.sender());
      // Probes and tables come only from a member whose view holds this
      // one (a donor's share may come before the donor has it as a member).
      const auto t = env.type();
      if (t == proto::PING || t == proto::ACK || t == proto::PING_REQ || t == proto::MEMBER_LIST)
        it->second.knows_us = true;
    }
  }
  switch (env.type()) {
    case proto::PING:
      on_ping(m);
      break;
    case proto::ACK:
      on_ack(m);
      break;
    case proto::PING_REQ:
      on_ping_req(m);
      break;
    case proto::MEMBER_LIST:
      merge(env.member_list());
      if (env.member_list().reply_wanted()) {
        proto::MemberList mine;
        {
          std::lock_guard lock(mu_);
          mine = table();
        }
        send_list(env.sender(), mine);
      }
      break;
    case proto::LEAVE:
      drop(env.sender(), "left");
      break;
    case proto::HELLO:
      handle_hello(env.sender(), env.hello());
      break;
    case proto::REUNION:
      on_reunion(m);
      break;
    default:  // HEARTBEAT: a peer of an older protocol; the validator refuses its version anyway
      break;
  }
}

void Membership::expire_joiners() {
  std::vector<std::string> expired;
  {
    std::lock_guard lock(mu_);
    for (const auto& j : admission_.expire(Clock::now())) {
      if (!j.refused) spdlog::warn("node '{}': joiner '{}' never got ready; forgotten", node_.id(), j.id);
      if (!entries_.count(j.id)) expired.push_back(j.id);
    }
  }
  for (const auto& id : expired) node_.remove_peer(id);
}

void Membership::loop(std::stop_token stop) {
  static constexpr proto::MessageType kTypes[] = {proto::LEAVE,     proto::HELLO,  proto::MEMBER_LIST,
                                                  proto::PING,      proto::ACK,    proto::PING_REQ,
                                                  proto::HEARTBEAT, proto::REUNION};
  while (!stop.stop_requested()) {
    if (Clock::now() >= next_tick_) tick();
    take_own_accusations();  // --evict-byzantine: what this member's worker named
    probe_indirectly();      // when this period's probe is due for it
    if (auto m = node_.mailbox().pop_any(kTypes, next_wake(), stop)) handle(*m);
  }
}

void Membership::stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void Membership::leave() {
  stop();
  proto::Envelope env = node_.envelope(proto::LEAVE);
  env.mutable_leave()->set_reason("shutdown");
  std::vector<std::string> peers;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, e] : entries_) peers.push_back(id);
  }
  for (const auto& id : peers) {
    try {
      node_.transport().send(id, {protocol::envelope_frame(env)}, std::chrono::milliseconds(100));
    } catch (const std::exception&) {
    }
  }
  // The sockets close with the node; what they still queue (the LEAVEs) is
  // flushed then, not dropped: the end of the process waits for it, at most
  // this long for a peer that is down.
  node_.transport().flush_on_close(std::chrono::seconds(1));
}

}  // namespace gossipd::daemon
