// Membership's side of a join, as the joiner's contact: a HELLO answered
// (admitted, refused with the reason, or a restarted member's old
// incarnation dropped), the share of the state it asks for (or all of it)
// snapshot at the next step, and the downloads sent one at a time
// (membership.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "daemon/cluster/membership.h"  // the class whose join side this is

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void Membership::handle_hello(const std::string& id, const proto::Hello& hello) {
  proto::MemberList reply;
  std::vector<std::string> announce_to;
  std::vector<Transfer> now_out;  // shares a held snapshot serves without waiting for a step
  bool restarted = false;
  {
    std::lock_guard lock(mu_);
    if (!policy_) return;  // still starting; the joiner asks again
    const auto now = Clock::now();
    if (hello.ready()) {
      auto j = joiners_.find(id);
      auto e = entries_.find(id);
      if (j == joiners_.end() && e != entries_.end() && e->second.endpoint == hello.endpoint()) {
        announce_to.push_back(id);  // already admitted: the announcement crossed its retry
        reply = table();
      } else if (j != joiners_.end() && !j->second.refused && j->second.state_sent) {
        const double rate = std::max(delegate_.rounds_per_second(), 0.0);
        const auto ahead = static_cast<uint64_t>(
            std::ceil(rate * std::chrono::duration<double>(options_.admit_ahead).count()));
        const uint64_t since = last_round_ + std::max<uint64_t>(ahead, 3);
        entries_[id] = Entry{j->second.endpoint, j->second.group, since, 0, false};
        suspicions_.refute(id);
        joiners_.erase(j);
        queue_update(proto::MemberUpdate::ALIVE, id);  // the probes carry it on, beside the announcement
        ++changes_;
        joins_.add();
        reply = table();
        reply.set_starts_in_ms(
            static_cast<uint32_t>(rate > 0 ? 1000.0 * static_cast<double>(since - last_round_) / rate
                                           : options_.admit_ahead.count()));
        for (const auto& [peer, entry] : entries_) announce_to.push_back(peer);
        spdlog::info("node '{}': admitted '{}' from round {} (now at round {})", node_.id(), id, since,
                     last_round_);
      } else {
        return;  // not a joiner this member is serving
      }
    } else {
      if (!joiners_.count(id) && joiners_.size() >= options_.max_pending_joiners) {
        spdlog::warn("node '{}': HELLO from '{}' dropped: {} joins already in progress", node_.id(), id,
                     joiners_.size());
        return;
      }
      if (id == self_.id()) {
        // Answering would connect our own id elsewhere: the joiner times out
        // with a hint that its --id may be taken.
        spdlog::warn("node '{}': HELLO under this member's own id from {} ignored", node_.id(),
                     hello.endpoint());
        return;
      }
      std::string why = policy_->refuse(hello);
      if (why.empty() && !entries_.count(id) && entries_.size() + 1 >= options_.max_members) {
        why = "the cluster is full: " + std::to_string(entries_.size() + 1) + " members, --max-members " +
              std::to_string(options_.max_members);
      }
      auto e = entries_.find(id);
      if (e != entries_.end() && !why.empty()) {
        // A live member's id with an unfit configuration: answering would
        // redirect our connection to that member. Not answered.
        spdlog::warn("node '{}': HELLO from {} under member '{}' refused unanswered: {}", node_.id(),
                     hello.endpoint(), id, why);
        return;
      }
      if (e != entries_.end() && why.empty()) {
        // A member that says HELLO again restarted: its old incarnation is gone.
        departed_.record(id, e->second.since_round);
        suspicions_.refute(id);
        entries_.erase(e);
        ++changes_;
        restarted = true;
      }
      auto j = joiners_.find(id);
      const bool repeat = j != joiners_.end() && j->second.endpoint == hello.endpoint() && !j->second.refused;
      if (!repeat) {
        Joiner fresh;
        fresh.endpoint = hello.endpoint();
        fresh.group = hello.group();
        fresh.deadline = now + (why.empty() ? options_.join_timeout : std::chrono::milliseconds(2000));
        fresh.refused = !why.empty();
        fresh.segment_lengths = share_cut_lengths(hello);
        fresh.param_floats = hello.parameter_floats();
        fresh.optimizer_floats = hello.optimizer_state_floats();
        j = joiners_.insert_or_assign(id, std::move(fresh)).first;
      }
      if (why.empty()) want_share(j->second, hello);
      if (why.empty()) now_out = from_held(id, j->second);
      if (why.empty()) {
        reply = table();
        reply.set_topology_seed(policy_->topology_seed);
      } else {
        reply.set_refused(why);
        spdlog::warn("node '{}': refused joiner '{}': {}", node_.id(), id, why);
      }
      reply.set_answers_nonce(hello.nonce());
      announce_to.push_back(id);
    }
  }
  if (restarted) {
    spdlog::warn(
        "node '{}': member '{}' asks to join again (it restarted): its old incarnation leaves the view",
        node_.id(), id);
    publish();
  }
  // The reply goes to the address a new joiner gave (a ready one is connected already).
  if (!hello.ready()) {
    if (!connect(id, hello.endpoint())) return;
    std::lock_guard lock(mu_);
    auto j = joiners_.find(id);
    if (j != joiners_.end() && j->second.endpoint == hello.endpoint()) j->second.connected = true;
  }
  for (const auto& to : announce_to) send_list(to, reply);
  for (auto& t : now_out) queue_transfer(std::move(t));
  if (hello.ready()) publish();
}

std::vector<Membership::Transfer> Membership::from_held(const std::string& id, Joiner& j) {
  std::vector<Transfer> out;
  if (!j.held || !j.connected) return out;
  for (const auto& [index, of] : j.wanted) {
    out.push_back(Transfer{
        id, index, share_span(j.segment_lengths, j.param_floats, j.optimizer_floats, index, of), j.held});
  }
  j.wanted.clear();
  return out;
}

void Membership::queue_transfer(Transfer t) {
  {
    std::lock_guard lock(transfer_mu_);
    transfers_.push_back(std::move(t));
  }
  transfer_cv_.notify_one();
}

void Membership::at_step(uint64_t round, const std::function<ReplicaState(const ShareSpan&)>& snapshot) {
  std::vector<Transfer> want;
  std::set<std::string> keep;  // joiners whose shares split no mass: their snapshot is kept
  bool republish = false;
  {
    std::lock_guard lock(mu_);
    last_round_ = round;
    for (auto& [id, j] : joiners_) {
      if (j.refused || j.wanted.empty() || !j.connected) continue;
      if (j.segment_lengths.empty()) keep.insert(id);
      for (const auto& [index, of] : j.wanted) {
        const ShareSpan span = share_span(j.segment_lengths, j.param_floats, j.optimizer_floats, index, of);
        want.push_back(Transfer{id, index, span, nullptr});
      }
      j.wanted.clear();
      j.state_sent = true;
    }
    republish = view_locked(round + 1).id() != published_view_;
  }
  // One snapshot per share where a share splits mass (SGP's halves go with
  // the share's segments); otherwise one per joiner, which it keeps.
  auto take = [&](const ShareSpan& span) {
    auto st = std::make_shared<ReplicaState>(snapshot(span));
    seal(*st);
    return std::shared_ptr<const ReplicaState>(std::move(st));
  };
  std::map<std::string, std::shared_ptr<const ReplicaState>> held;
  for (auto& t : want) {
    if (keep.count(t.to)) {
      auto& h = held[t.to];
      if (!h) h = take(t.span);
      t.state = h;
    } else {
      t.state = take(t.span);
    }
    queue_transfer(std::move(t));
  }
  if (!held.empty()) {
    std::lock_guard lock(mu_);
    for (auto& [id, h] : held) {
      auto j = joiners_.find(id);
      if (j != joiners_.end()) j->second.held = std::move(h);
    }
  }
  if (republish) publish();
}

void Membership::want_share(Joiner& j, const proto::Hello& hello) {
  // A joiner that asks for no share takes the whole state; one that will ask
  // (by_shares) is sent nothing until it does. The validator checked index < of.
  std::pair<uint32_t, uint32_t> share{0, 1};
  if (hello.has_share()) {
    share = {hello.share().index(), hello.share().of()};
  } else if (hello.by_shares()) {
    return;
  }
  if (std::find(j.asked.begin(), j.asked.end(), share.first) != j.asked.end()) return;  // a repeated HELLO
  j.asked.push_back(share.first);
  j.wanted.push_back(share);
}

void Membership::transfer_loop(std::stop_token stop) {
  // One download at a time: a burst of joiners cannot take every link at once.
  for (;;) {
    Transfer job;
    {
      std::unique_lock lock(transfer_mu_);
      if (!transfer_cv_.wait(lock, stop, [&] { return !transfers_.empty(); })) return;
      job = std::move(transfers_.front());
      transfers_.pop_front();
    }
    const auto start = Clock::now();
    try {
      send_state(node_, job.to, job.state, job.index, job.span, options_.state_chunk_bytes,
                 std::chrono::milliseconds(5000));
      spdlog::info("node '{}': share {} of the state for '{}' queued ({} floats, step {}) in {:.0f} ms",
                   node_.id(), job.index, job.to, job.span.floats(), job.state->header.step(),
                   std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    } catch (const std::exception& e) {
      shares_abandoned_.add();
      spdlog::warn("node '{}': state download to '{}' abandoned: {}", node_.id(), job.to, e.what());
    }
  }
}

}  // namespace gossipd::daemon
