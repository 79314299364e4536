#include "daemon/cluster/admission.h"

#include <algorithm>

namespace gossipd::daemon {

std::vector<ShareTransfer> Admission::hello(const std::string& id, const proto::Hello& hello,
                                            const std::string& why, Clock::time_point now) {
  auto j = joiners_.find(id);
  const bool repeat = j != joiners_.end() && j->second.endpoint == hello.endpoint() && !j->second.refused;
  if (!repeat) {
    Joiner fresh;
    fresh.endpoint = hello.endpoint();
    fresh.group = hello.group();
    // A refused joiner is remembered briefly: its repeats are answered alike.
    fresh.deadline = now + (why.empty() ? timeout_ : std::chrono::milliseconds(2000));
    fresh.refused = !why.empty();
    fresh.segment_lengths = share_cut_lengths(hello);
    fresh.param_floats = hello.parameter_floats();
    fresh.optimizer_floats = hello.optimizer_state_floats();
    j = joiners_.insert_or_assign(id, std::move(fresh)).first;
  }
  if (!why.empty()) return {};
  want_share(j->second, hello);
  return from_held(id, j->second);
}

void Admission::connected(const std::string& id, const std::string& endpoint) {
  auto j = joiners_.find(id);
  if (j != joiners_.end() && j->second.endpoint == endpoint) j->second.connected = true;
}

std::optional<Admission::Joiner> Admission::take_ready(const std::string& id) {
  auto j = joiners_.find(id);
  if (j == joiners_.end() || j->second.refused || !j->second.state_sent) return std::nullopt;
  Joiner out = std::move(j->second);
  joiners_.erase(j);
  return out;
}

Admission::Due Admission::due() {
  Due out;
  for (auto& [id, j] : joiners_) {
    if (j.refused || j.wanted.empty() || !j.connected) continue;
    if (j.segment_lengths.empty()) out.kept.insert(id);
    for (const auto& [index, of] : j.wanted) {
      const ShareSpan span = share_span(j.segment_lengths, j.param_floats, j.optimizer_floats, index, of);
      out.shares.push_back(ShareTransfer{id, index, span, nullptr});
    }
    j.wanted.clear();
    j.state_sent = true;
  }
  return out;
}

void Admission::hold(const std::string& id, std::shared_ptr<const ReplicaState> state) {
  auto j = joiners_.find(id);
  if (j != joiners_.end()) j->second.held = std::move(state);
}

std::vector<Admission::Expired> Admission::expire(Clock::time_point now) {
  std::vector<Expired> out;
  for (auto it = joiners_.begin(); it != joiners_.end();) {
    if (now < it->second.deadline) {
      ++it;
      continue;
    }
    out.push_back(Expired{it->first, it->second.refused});
    it = joiners_.erase(it);
  }
  return out;
}

void Admission::want_share(Joiner& j, const proto::Hello& hello) {
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

std::vector<ShareTransfer> Admission::from_held(const std::string& id, Joiner& j) {
  std::vector<ShareTransfer> out;
  if (!j.held || !j.connected) return out;
  for (const auto& [index, of] : j.wanted) {
    out.push_back(ShareTransfer{
        id, index, share_span(j.segment_lengths, j.param_floats, j.optimizer_floats, index, of), j.held});
  }
  j.wanted.clear();
  return out;
}

}  // namespace gossipd::daemon
