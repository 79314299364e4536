// Membership's failure detection and dissemination, SWIM's: a probe per
// period, indirect probes, suspicion and refutation, updates piggybacked on
// the probes, anti-entropy by push-pull, and the member that finds itself
// cut off (membership.h).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/cluster/membership.h"  // the class whose failure detection this is

namespace gossipd::daemon {

std::chrono::milliseconds Membership::probe_timeout() const {
  const auto base =
      options_.probe_timeout.count() > 0 ? options_.probe_timeout : options_.heartbeat_interval / 2;
  return health_.scale(base);
}

std::chrono::milliseconds Membership::push_pull_period() const {
  const auto scale = std::max<size_t>(1, (entries_.size() + 1) / 32);
  return options_.push_pull_interval * static_cast<int64_t>(scale);
}

std::chrono::milliseconds Membership::period() const { return health_.scale(options_.heartbeat_interval); }

void Membership::adjust_health(int delta) {
  health_.adjust(delta);
  health_gauge_.set(static_cast<double>(health_.score()));
}

const std::vector<std::string>& Membership::peer_ids() {
  if (peer_ids_at_ != changes_ || peer_ids_.size() != entries_.size()) {
    peer_ids_.clear();
    for (const auto& [id, e] : entries_) peer_ids_.push_back(id);
    peer_ids_at_ = changes_;
  }
  return peer_ids_;
}

Membership::Clock::time_point Membership::next_wake() const {
  std::lock_guard lock(mu_);
  auto wake = next_tick_;
  if (probe_ && !probe_->acked && !probe_->indirect) wake = std::min(wake, probe_->sent + probe_timeout());
  return wake;
}

void Membership::queue_update(proto::MemberUpdate::Kind kind, const std::string& id) {
  proto::MemberUpdate u;
  u.set_kind(kind);
  proto::Member& m = *u.mutable_member();
  if (id == self_.id()) {
    m = self_;
  } else if (auto it = entries_.find(id); it != entries_.end()) {
    m.set_id(id);
    m.set_endpoint(it->second.endpoint);
    m.set_group(it->second.group);
    m.set_since_round(it->second.since_round);
    m.set_incarnation(it->second.incarnation);
  } else {
    return;
  }
  updates_.add(u);
}

void Membership::send_probe(proto::MessageType type, const std::string& to, uint64_t seq,
                            const std::string& target) {
  proto::Envelope env = node_.envelope(type);
  proto::Probe& p = *env.mutable_probe();
  p.set_seq(seq);
  if (!target.empty()) p.set_target(target);
  {
    std::lock_guard lock(mu_);
    for (auto& u : updates_.take(options_.max_piggyback, retransmit_limit(entries_.size() + 1)))
      *p.add_updates() = std::move(u);
  }
  try {
    node_.transport().send(to, {protocol::envelope_frame(env)}, std::chrono::milliseconds(0));
  } catch (const std::exception& e) {
    // A full queue to a silent peer: its probe goes unanswered, and it is suspected.
    spdlog::debug("node '{}': {} to '{}' not sent: {}", node_.id(), proto::MessageType_Name(type), to,
                  e.what());
  }
}

// One period: the last probe's outcome, suspicions that ran out, this
// member's own silence, a new probe, anti-entropy, joiners that never came.
void Membership::tick() {
  const auto now = Clock::now();
  excuse_pause(now - next_tick_);
  {
    std::lock_guard lock(mu_);
    next_tick_ = now + period();
  }
  if (cut_off(now)) return;
  const bool free = end_probe(now);
  expire_suspicions(now);
  if (free) start_probe(now);
  push_pull(now);
  seek_reunion(now);
  expire_joiners();
}

void Membership::excuse_pause(Clock::duration late) {
  if (late <= options_.heartbeat_interval) return;  // scheduling jitter
  {
    std::lock_guard lock(mu_);
    if (!armed_) return;
    heard_ += late;
    suspicions_.postpone(late);
    adjust_health(+1);  // its own period came late: this member is the slow one
    probe_.reset();     // its ACK may be queued here, unread
    relays_.clear();
  }
  spdlog::warn(
      "node '{}': membership was paused for {:.1f} s (this process did not run); that silence is "
      "not held against the peers",
      node_.id(), std::chrono::duration<double>(late).count());
}

// Heard from no peer for the failure timeout, with two or more of them:
// they evicted this member while it was away, or they are all gone. Either
// way it must not train on alone as if it were the cluster.
bool Membership::cut_off(Clock::time_point now) {
  std::string why;
  std::vector<std::string> contacts;  // the peers it last knew: whoever still runs may take it back
  {
    std::lock_guard lock(mu_);
    if (lost_ || !armed_ || entries_.size() < 2 || now - heard_ < options_.failure_timeout) return lost_;
    lost_ = true;
    why = "heard from none of its " + std::to_string(entries_.size()) + " peers for " +
          std::to_string(options_.failure_timeout.count()) +
          " ms (--failure-timeout-ms): the cluster evicted it while it did not run, or every peer is "
          "gone";
    for (const auto& [id, e] : entries_) contacts.push_back(e.endpoint);
  }
  spdlog::error("node '{}': {}", node_.id(), why);
  if (options_.on_lost) options_.on_lost(why, contacts);
  return true;
}

// The probe out: answered, it is done; unanswered, its indirect probes get
// a period of their own (their ACK takes four hops), then no ACK, direct or
// relayed, makes its target a suspect. True when the next probe may go.
bool Membership::end_probe(Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (!probe_ || probe_->acked || !armed_) {
    if (probe_ && probe_->acked) adjust_health(-1);
    probe_.reset();
    return true;
  }
  if (now < probe_->sent + 2 * period()) return false;
  adjust_health(+1);  // no ACK, direct or relayed: the fault may as well be this member's
  auto it = entries_.find(probe_->target);
  // A member that has just entered (a joiner, one that rejoined) is not yet
  // known everywhere: a peer that has not heard of it drops its probe as
  // from an unknown sender. Within its first failure timeout it suspects
  // only peers that have shown they know it (a probe or a table from them).
  const bool unknown_to_it =
      it != entries_.end() && !it->second.knows_us && now < armed_at_ + options_.failure_timeout;
  if (unknown_to_it) {
    spdlog::debug("node '{}': '{}' did not answer a probe, but may not know this member yet", node_.id(),
                  probe_->target);
  } else if (it != entries_.end() && suspicions_.mark(probe_->target, now + options_.failure_timeout)) {
    suspected_.add();
    queue_update(proto::MemberUpdate::SUSPECT, probe_->target);
    spdlog::info("node '{}': member '{}' did not answer a probe; suspected", node_.id(), probe_->target);
  }
  probe_.reset();
  return true;
}

void Membership::expire_suspicions(Clock::time_point now) {
  std::vector<std::string> dead;
  {
    std::lock_guard lock(mu_);
    dead = suspicions_.expired(now);  // the suspects only, not a scan of the table
    for (const auto& id : dead) queue_update(proto::MemberUpdate::DEAD, id);
  }
  for (const auto& id : dead) {
    evictions_.add();
    drop(id, "evicted (suspected, and no word from it within the failure timeout)", true);
  }
}

void Membership::start_probe(Clock::time_point now) {
  std::string target;
  uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    const auto next =
        order_.next(peer_ids(), [this](const std::string& id) { return entries_.count(id) > 0; });
    if (!next) return;
    target = *next;
    seq = next_seq_++;
    probe_ = Probe{target, seq, now};
    for (auto it = relays_.begin(); it != relays_.end();)
      it = now >= it->second.expires ? relays_.erase(it) : std::next(it);
  }
  send_probe(proto::PING, target, seq, "");
}

// No ACK within the probe timeout: k others ping the target for this member.
void Membership::probe_indirectly() {
  std::vector<std::string> helpers;
  std::string target;
  uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    if (!probe_ || probe_->acked || probe_->indirect || Clock::now() < probe_->sent + probe_timeout()) return;
    probe_->indirect = true;
    target = probe_->target;
    seq = probe_->seq;
    helpers = draw_others(peer_ids(), target, options_.indirect_probes, rng_);
  }
  if (!helpers.empty()) indirect_probes_.add();
  for (const auto& h : helpers) send_probe(proto::PING_REQ, h, seq, target);
}

void Membership::push_pull(Clock::time_point now) {
  std::string to;
  proto::MemberList mine;
  {
    std::lock_guard lock(mu_);
    if (entries_.empty()) return;
    // A member whose label is not known yet is asked first (its table holds
    // it). Labels are only learned, so a table found all labelled stays so
    // until it changes.
    const bool due = options_.push_pull_interval.count() > 0 && now >= next_push_pull_;
    if (!due && (self_.group().empty() || all_labelled_at_ == changes_)) return;
    auto unlabelled = std::find_if(entries_.begin(), entries_.end(),
                                   [](const auto& kv) { return kv.second.group.empty(); });
    if (unlabelled == entries_.end()) all_labelled_at_ = changes_;
    if (!due && unlabelled == entries_.end()) return;
    if (due) {
      next_push_pull_ = now + push_pull_period();
      to = draw_others(peer_ids(), "", 1, rng_).front();
    } else {
      to = unlabelled->first;
    }
    mine = table();
    mine.set_reply_wanted(true);
  }
  send_list(to, mine);
}

void Membership::on_ping(const protocol::Message& m) {
  apply(m.envelope.probe());
  send_probe(proto::ACK, m.envelope.sender(), m.envelope.probe().seq(), "");
}

void Membership::on_ack(const protocol::Message& m) {
  const proto::Probe& p = m.envelope.probe();
  apply(p);
  std::optional<Relay> relay;
  {
    std::lock_guard lock(mu_);
    if (auto r = relays_.find(p.seq()); r != relays_.end()) {
      relay = r->second;
      relays_.erase(r);
    } else if (probe_ && probe_->seq == p.seq() &&
               (p.target().empty() ? m.envelope.sender() : p.target()) == probe_->target) {
      probe_->acked = true;
    }
  }
  if (relay) send_probe(proto::ACK, relay->requester, relay->seq, m.envelope.sender());
}

void Membership::on_ping_req(const protocol::Message& m) {
  const proto::Probe& p = m.envelope.probe();
  apply(p);
  uint64_t seq = 0;
  {
    std::lock_guard lock(mu_);
    if (!entries_.count(p.target())) return;
    seq = next_seq_++;
    relays_[seq] = Relay{m.envelope.sender(), p.seq(), Clock::now() + options_.heartbeat_interval};
  }
  send_probe(proto::PING, p.target(), seq, "");
}

}  // namespace gossipd::daemon
