// Membership's side of a join, as the joiner's contact: a HELLO answered
// (admitted, refused with the reason, or a restarted member's old
// incarnation dropped), the share of the state it asks for (or all of it)
// snapshot at the next step, and each download sent (membership.h). What
// each joiner asked for and when it is forgotten is Admission's
// (admission.h); the downloads go one at a time through the ShareQueue
// (share_queue.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "daemon/cluster/membership.h"  // the class whose join side this is

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void Membership::handle_hello(const std::string& id, const proto::Hello& hello) {
  proto::MemberList reply;
  std::vector<std::string> announce_to;
  std::vector<ShareTransfer> now_out;  // shares a held snapshot serves without waiting for a step
  bool restarted = false;
  {
    std::lock_guard lock(mu_);
    if (!admission_.open()) return;  // still starting; the joiner asks again
    const auto now = Clock::now();
    if (hello.ready()) {
      auto e = entries_.find(id);
      std::optional<Admission::Joiner> j;
      if (!admission_.serving(id) && e != entries_.end() && e->second.endpoint == hello.endpoint()) {
        announce_to.push_back(id);  // already admitted: the announcement crossed its retry
        reply = table();
      } else if ((j = admission_.take_ready(id))) {
        const double rate = std::max(delegate_.rounds_per_second(), 0.0);
        const auto ahead = static_cast<uint64_t>(
            std::ceil(rate * std::chrono::duration<double>(options_.admit_ahead).count()));
        const uint64_t since = last_round_ + std::max<uint64_t>(ahead, 3);
        entries_[id] = Entry{j->endpoint, j->group, since, 0, false};
        suspicions_.refute(id);
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
      if (admission_.full(id)) {
        spdlog::warn("node '{}': HELLO from '{}' dropped: {} joins already in progress", node_.id(), id,
                     admission_.pending());
        return;
      }
      if (id == self_.id()) {
        // Answering would connect our own id elsewhere: the joiner times out
        // with a hint that its --id may be taken.
        spdlog::warn("node '{}': HELLO under this member's own id from {} ignored", node_.id(),
                     hello.endpoint());
        return;
      }
      std::string why = admission_.refusal(hello);
      if (accusations_.banned(id))
        why = "member '" + id + "' was evicted as Byzantine in this run (named by " +
              std::to_string(accusations_.of(id).size()) +
              " members, --evict-byzantine): it may not come back";
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
      now_out = admission_.hello(id, hello, why, now);
      if (why.empty()) {
        reply = table();
        reply.set_topology_seed(admission_.topology_seed());
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
    admission_.connected(id, hello.endpoint());
  }
  for (const auto& to : announce_to) send_list(to, reply);
  for (auto& t : now_out) shares_.push(std::move(t));
  if (hello.ready()) publish();
}

void Membership::at_step(uint64_t round, const std::function<ReplicaState(const ShareSpan&)>& snapshot) {
  Admission::Due due;
  bool republish = false;
  {
    std::lock_guard lock(mu_);
    last_round_ = round;
    due = admission_.due();
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
  for (auto& t : due.shares) {
    if (due.kept.count(t.to)) {
      auto& h = held[t.to];
      if (!h) h = take(t.span);
      t.state = h;
    } else {
      t.state = take(t.span);
    }
    shares_.push(std::move(t));
  }
  if (!held.empty()) {
    std::lock_guard lock(mu_);
    for (auto& [id, h] : held) admission_.hold(id, std::move(h));
  }
  if (republish) publish();
}

void Membership::send_share(const ShareTransfer& job) {
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

}  // namespace gossipd::daemon
