#include "daemon/cluster/auto_group.h"

#include <algorithm>

namespace gossipd::daemon {

std::vector<RoundTrips::Ping> RoundTrips::due(const std::vector<std::string>& peers, Clock::time_point now) {
  std::vector<Ping> pings;
  for (const auto& id : peers) {
    Peer& p = peers_[id];
    if (p.out != 0 && now >= out_.at(p.out).sent + give_up_) {
      ++(out_.at(p.out).padded ? p.rate : p.delay).unanswered;
      out_.erase(p.out);  // its ACK, if it ever comes, is ignored
      p.out = 0;
    }
    if (p.out != 0 || settled(p)) continue;
    const bool padded = p.delay.done();  // and near by it: else settled
    p.out = next_++;
    out_[p.out] = Out{id, now, padded};
    pings.push_back({id, p.out, padded ? kPaddingBytes : 0});
  }
  return pings;
}

bool RoundTrips::acked(uint64_t seq, const std::string& from, Clock::time_point now) {
  if ((seq & kSeqBit) == 0) return false;
  const auto it = out_.find(seq);
  if (it == out_.end() || it->second.peer != from) return true;  // given up on, or not from its peer
  Peer& p = peers_[from];
  Stage& stage = it->second.padded ? p.rate : p.delay;
  stage.least = std::min(stage.least, now - it->second.sent);
  ++stage.answered;
  p.out = 0;
  out_.erase(it);
  return true;
}

bool RoundTrips::settled(const std::vector<std::string>& peers) const {
  return std::all_of(peers.begin(), peers.end(), [&](const std::string& id) {
    const auto it = peers_.find(id);
    return it != peers_.end() && settled(it->second);
  });
}

std::map<std::string, RoundTrips::Clock::duration> RoundTrips::least() const {
  std::map<std::string, Clock::duration> out;
  for (const auto& [id, p] : peers_) {
    const Stage& s = near_by_delay(p) ? p.rate : p.delay;
    if (s.answered > 0) out[id] = s.least;
  }
  return out;
}

GroupChoice choose_group(const std::string& self,
                         const std::map<std::string, RoundTrips::Clock::duration>& round_trips,
                         const std::map<std::string, std::string>& labels, RoundTrips::Clock::duration near) {
  std::vector<std::pair<RoundTrips::Clock::duration, std::string>> within;
  for (const auto& [id, rtt] : round_trips) {
    if (rtt <= near && id != self) within.emplace_back(rtt, id);
  }
  std::sort(within.begin(), within.end());
  GroupChoice c;
  for (const auto& [rtt, id] : within) c.near.push_back(id);
  for (const auto& id : c.near) {
    const auto it = labels.find(id);
    if (it != labels.end() && !it->second.empty()) {
      c.label = it->second;  // the region's group already has a name
      return c;
    }
  }
  std::string lowest = self;
  for (const auto& id : c.near) lowest = std::min(lowest, id);
  c.label = "auto-" + lowest;
  return c;
}

}  // namespace gossipd::daemon
