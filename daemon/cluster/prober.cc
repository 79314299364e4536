#include "daemon/cluster/prober.h"

namespace gossipd::daemon {

std::optional<Prober::Send> Prober::start(Clock::time_point now, const std::vector<std::string>& peers,
                                          const std::function<bool(const std::string&)>& listed) {
  const auto next = order_.next(peers, listed);
  if (!next) return std::nullopt;
  const uint64_t seq = next_seq_++;
  probe_ = Probe{*next, seq, now};
  for (auto it = relays_.begin(); it != relays_.end();)
    it = now >= it->second.expires ? relays_.erase(it) : std::next(it);
  return Send{proto::PING, *next, seq, ""};
}

// Answered, the probe is done; unanswered, its indirect probes get a period
// of their own (their ACK takes four hops), then no ACK makes it unanswered.
Prober::End Prober::end(Clock::time_point now, std::chrono::milliseconds period, bool armed) {
  if (!probe_ || probe_->acked || !armed) {
    const bool acked = probe_ && probe_->acked;
    probe_.reset();
    return End{acked ? Outcome::kAcked : Outcome::kFree, ""};
  }
  if (now < probe_->sent + 2 * period) return End{Outcome::kWaiting, probe_->target};
  End out{Outcome::kUnanswered, probe_->target};
  probe_.reset();
  return out;
}

std::optional<Prober::Indirect> Prober::indirect(Clock::time_point now, std::chrono::milliseconds timeout) {
  if (!probe_ || probe_->acked || probe_->indirect || now < probe_->sent + timeout) return std::nullopt;
  probe_->indirect = true;
  return Indirect{probe_->target, probe_->seq};
}

std::optional<Prober::Clock::time_point> Prober::indirect_at(std::chrono::milliseconds timeout) const {
  if (!probe_ || probe_->acked || probe_->indirect) return std::nullopt;
  return probe_->sent + timeout;
}

std::optional<Prober::Send> Prober::ack(uint64_t seq, const std::string& sender, const std::string& target) {
  if (auto r = relays_.find(seq); r != relays_.end()) {
    Send out{proto::ACK, r->second.requester, r->second.seq, sender};
    relays_.erase(r);
    return out;
  }
  if (probe_ && probe_->seq == seq && (target.empty() ? sender : target) == probe_->target)
    probe_->acked = true;
  return std::nullopt;
}

Prober::Send Prober::relay(const std::string& requester, uint64_t seq, const std::string& target,
                           Clock::time_point expires) {
  const uint64_t mine = next_seq_++;
  relays_[mine] = Relay{requester, seq, expires};
  return Send{proto::PING, target, mine, ""};
}

void Prober::reset() {
  probe_.reset();
  relays_.clear();
}

}  // namespace gossipd::daemon
