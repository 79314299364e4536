// Membership's failure detection and dissemination, SWIM's: a probe per
// period, indirect probes, suspicion and refutation, updates piggybacked on
// the probes, anti-entropy by push-pull, and the member that finds itself
// cut off (membership.h). The probes' state is Prober's (prober.h), the
// suspicion timers Suspicions' (suspicions.h), the score that stretches the
// period LocalHealth's (local_health.h): here they meet the table and the wire.
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
  if (const auto at = prober_.indirect_at(probe_timeout())) wake = std::min(wake, *at);
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

void Membership::send_probe(const Prober::Send& s) {
  proto::Envelope env = node_.envelope(s.type);
  proto::Probe& p = *env.mutable_probe();
  p.set_seq(s.seq);
  if (!s.target.empty()) p.set_target(s.target);
  if (s.padding > 0) p.set_padding(std::string(s.padding, '\0'));
  {
    std::lock_guard lock(mu_);
    for (auto& u : updates_.take(options_.max_piggyback, retransmit_limit(entries_.size() + 1)))
      *p.add_updates() = std::move(u);
  }
  try {
    node_.send_control(s.to, {protocol::envelope_frame(env)}, std::chrono::milliseconds(0));
  } catch (const std::exception& e) {
    // A full queue to a silent peer: its probe goes unanswered, and it is suspected.
    spdlog::debug("node '{}': {} to '{}' not sent: {}", node_.id(), proto::MessageType_Name(s.type), s.to,
                  e.what());
  }
}

// One period: the last probe's outcome, suspicions that ran out, this
// member's own silence, a new probe, anti-entropy, joiners that never came.
void Membership::tick() {
  const auto now = Clock::now();
  excuse_pause(now, now - next_tick_);
  {
    std::lock_guard lock(mu_);
    next_tick_ = now + period();
  }
  if (cut_off(now)) return;
  const bool free = end_probe(now);
  expire_suspicions(now);
  if (free) start_probe(now);
  measure_round_trips(now);
  push_pull(now);
  seek_reunion(now);
  expire_joiners();
}

void Membership::excuse_pause(Clock::time_point now, Clock::duration late) {
  if (late <= options_.heartbeat_interval) return;  // scheduling jitter
  {
    std::lock_guard lock(mu_);
    if (!armed_) return;
    // The pause is not silence, but no later than now: what reached the
    // mailbox during the pause may have been handled (heard_ = now) before
    // this tick, and silence counted from the future would let this
    // member's suspicions evict every peer before it learns it was cut off.
    heard_ = std::min(heard_ + late, now);
    suspicions_.postpone(late);
    adjust_health(+1);  // its own period came late: this member is the slow one
    prober_.reset();    // its ACK may be queued here, unread
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
// a period of their own (Prober::end), then no ACK, direct or relayed, makes
// its target a suspect. True when the next probe may go.
bool Membership::end_probe(Clock::time_point now) {
  std::lock_guard lock(mu_);
  const auto end = prober_.end(now, period(), armed_);
  if (end.outcome == Prober::Outcome::kAcked) adjust_health(-1);
  if (end.outcome != Prober::Outcome::kUnanswered) return end.outcome != Prober::Outcome::kWaiting;
  adjust_health(+1);  // no ACK, direct or relayed: the fault may as well be this member's
  auto it = entries_.find(end.target);
  // A member that has just entered (a joiner, one that rejoined) is not yet
  // known everywhere: a peer that has not heard of it drops its probe as
  // from an unknown sender. Within its first failure timeout it suspects
  // only peers that have shown they know it (a probe or a table from them).
  const bool unknown_to_it =
      it != entries_.end() && !it->second.knows_us && now < armed_at_ + options_.failure_timeout;
  if (unknown_to_it) {
    spdlog::debug("node '{}': '{}' did not answer a probe, but may not know this member yet", node_.id(),
                  end.target);
  } else if (it != entries_.end() && suspicions_.mark(end.target, now + options_.failure_timeout)) {
    suspected_.add();
    queue_update(proto::MemberUpdate::SUSPECT, end.target);
    spdlog::info("node '{}': member '{}' did not answer a probe; suspected", node_.id(), end.target);
  }
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
  std::optional<Prober::Send> ping;
  {
    std::lock_guard lock(mu_);
    ping = prober_.start(now, peer_ids(), [this](const std::string& id) { return entries_.count(id) > 0; });
  }
  if (ping) send_probe(*ping);
}

// No ACK within the probe timeout: k others ping the target for this member.
void Membership::probe_indirectly() {
  std::vector<std::string> helpers;
  std::optional<Prober::Indirect> due;
  {
    std::lock_guard lock(mu_);
    due = prober_.indirect(Clock::now(), probe_timeout());
    if (!due) return;
    helpers = draw_others(peer_ids(), due->target, options_.indirect_probes, rng_);
  }
  if (!helpers.empty()) indirect_probes_.add();
  for (const auto& h : helpers) send_probe({proto::PING_REQ, h, due->seq, due->target});
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
  // A measuring PING's padding goes back with its ACK (validated: at most kMaxProbePadding).
  send_probe(
      {proto::ACK, m.envelope.sender(), m.envelope.probe().seq(), "", m.envelope.probe().padding().size()});
}

void Membership::on_ack(const protocol::Message& m) {
  const proto::Probe& p = m.envelope.probe();
  apply(p);
  if (on_round_trip(m)) return;  // --group auto's measuring PING, not a probe
  std::optional<Prober::Send> relayed;
  {
    std::lock_guard lock(mu_);
    relayed = prober_.ack(p.seq(), m.envelope.sender(), p.target());
  }
  if (relayed) send_probe(*relayed);
}

void Membership::on_ping_req(const protocol::Message& m) {
  const proto::Probe& p = m.envelope.probe();
  apply(p);
  Prober::Send ping;
  {
    std::lock_guard lock(mu_);
    if (!entries_.count(p.target())) return;
    ping =
        prober_.relay(m.envelope.sender(), p.seq(), p.target(), Clock::now() + options_.heartbeat_interval);
  }
  send_probe(ping);
}

}  // namespace gossipd::daemon
