#include "protocol/mailbox.h"

namespace gossipd::protocol {

void Mailbox::push(Message msg) {
  const auto& env = msg.envelope;
  {
    std::lock_guard lock(mutex_);
    // Gossip segments are keyed like collective chunks: tag = protocol,
    // seq = round, so a round never takes another round's segments.
    if (env.type() == proto::COLLECTIVE_CHUNK || env.type() == proto::SEGMENT) {
      auto open = first_open_seq_.find(env.collective_tag());
      if (open != first_open_seq_.end() && env.collective_seq() < open->second) {
        log_.reject(env.sender(), RejectReason::kStale,
                    "tag " + std::to_string(env.collective_tag()) + " seq " + std::to_string(env.collective_seq()));
        return;
      }
      chunks_[ChunkKey{env.collective_tag(), env.collective_seq(), env.sender()}].push_back(std::move(msg));
    } else {
      auto& q = control_[env.type()];
      if (q.size() >= max_control_) q.pop_front();  // nobody is reading: keep the newest
      q.push_back(std::move(msg));
    }
  }
  cv_.notify_all();
}

std::optional<Message> Mailbox::pop_chunk(const ChunkKey& key, Clock::time_point deadline, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  auto ready = [&] {
    auto it = chunks_.find(key);
    return it != chunks_.end() && !it->second.empty();
  };
  if (!cv_.wait_until(lock, stop, deadline, ready)) return std::nullopt;
  auto it = chunks_.find(key);
  Message m = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) chunks_.erase(it);
  return m;
}

std::optional<Message> Mailbox::pop(proto::MessageType type, Clock::time_point deadline, std::stop_token stop) {
  const proto::MessageType types[] = {type};
  return pop_any(types, deadline, stop);
}

std::optional<Message> Mailbox::pop_any(std::span<const proto::MessageType> types, Clock::time_point deadline,
                                        std::stop_token stop) {
  std::unique_lock lock(mutex_);
  std::deque<Message>* found = nullptr;
  auto ready = [&] {
    for (auto type : types) {
      auto it = control_.find(type);
      if (it != control_.end() && !it->second.empty()) {
        found = &it->second;
        return true;
      }
    }
    return false;
  };
  if (!cv_.wait_until(lock, stop, deadline, ready)) return std::nullopt;
  Message m = std::move(found->front());
  found->pop_front();
  return m;
}

void Mailbox::finish(uint32_t tag, uint64_t seq) {
  std::lock_guard lock(mutex_);
  auto& open = first_open_seq_[tag];
  open = std::max(open, seq + 1);
  for (auto it = chunks_.lower_bound(ChunkKey{tag, 0, ""}); it != chunks_.end() && it->first.tag == tag;) {
    it = it->first.seq < open ? chunks_.erase(it) : std::next(it);
  }
}

}  // namespace gossipd::protocol
