#include "protocol/transport/mailbox.h"

namespace gossipd::protocol {

namespace {

size_t size_of(const Message& m) {
  size_t n = m.envelope.ByteSizeLong();
  for (const auto& f : m.payload) n += f.size();
  return n;
}

}  // namespace

Message Mailbox::take(std::deque<Message>& q) {
  Message m = std::move(q.front());
  q.pop_front();
  forget(m);
  return m;
}

void Mailbox::forget(const Message& m) {
  auto it = queued_.find(m.envelope.sender());
  if (it == queued_.end()) return;
  it->second -= std::min(it->second, size_of(m));
  if (it->second == 0) queued_.erase(it);
}

size_t Mailbox::queued_bytes(const std::string& sender) const {
  std::lock_guard lock(mutex_);
  auto it = queued_.find(sender);
  return it == queued_.end() ? 0 : it->second;
}

void Mailbox::push(Message msg) {
  msg.arrived = Clock::now();
  const auto& env = msg.envelope;
  {
    std::lock_guard lock(mutex_);
    const size_t bytes = size_of(msg);
    size_t& queued = queued_[env.sender()];
    if (queued + bytes > max_queued_bytes_) {
      log_.reject(env.sender(), RejectReason::kQueueFull,
                  std::to_string(queued) + " bytes queued, limit " + std::to_string(max_queued_bytes_));
      if (queued == 0) queued_.erase(env.sender());
      return;
    }
    // Gossip segments are keyed like collective chunks: tag = protocol,
    // seq = round, so a round never takes another round's segments.
    if (env.type() == proto::COLLECTIVE_CHUNK || env.type() == proto::SEGMENT) {
      auto open = open_.find(env.collective_tag());
      if (open != open_.end() && env.collective_seq() < open->second.first_seq) {
        if (open->second.late == Late::kStale) {
          log_.reject(
              env.sender(), RejectReason::kStale,
              "tag " + std::to_string(env.collective_tag()) + " seq " + std::to_string(env.collective_seq()));
        }
        return;
      }
      queued += bytes;
      chunks_[ChunkKey{env.collective_tag(), env.collective_seq(), env.sender()}].push_back(std::move(msg));
    } else {
      queued += bytes;
      auto& q = control_[env.type()];
      if (q.size() >= max_control_) take(q);  // nobody is reading: keep the newest
      q.push_back(std::move(msg));
    }
  }
  cv_.notify_all();
}

std::optional<Message> Mailbox::pop_chunk(const ChunkKey& key, Clock::time_point deadline,
                                          std::stop_token stop) {
  std::unique_lock lock(mutex_);
  auto ready = [&] {
    auto it = chunks_.find(key);
    return it != chunks_.end() && !it->second.empty();
  };
  if (!cv_.wait_until(lock, stop, deadline, ready)) return std::nullopt;
  auto it = chunks_.find(key);
  Message m = take(it->second);
  if (it->second.empty()) chunks_.erase(it);
  return m;
}

std::optional<Message> Mailbox::pop_tag(uint32_t tag, Clock::time_point deadline, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  auto first = [&] {
    for (auto it = chunks_.lower_bound(ChunkKey{tag, 0, ""}); it != chunks_.end() && it->first.tag == tag;
         ++it)
      if (!it->second.empty()) return it;
    return chunks_.end();
  };
  if (!cv_.wait_until(lock, stop, deadline, [&] { return first() != chunks_.end(); })) return std::nullopt;
  auto it = first();
  Message m = take(it->second);
  if (it->second.empty()) chunks_.erase(it);
  return m;
}

std::optional<Message> Mailbox::pop(proto::MessageType type, Clock::time_point deadline,
                                    std::stop_token stop) {
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
  return take(*found);
}

std::vector<Message> Mailbox::drain(uint32_t tag, const std::string& sender) {
  std::lock_guard lock(mutex_);
  std::vector<Message> out;
  for (auto it = chunks_.lower_bound(ChunkKey{tag, 0, ""}); it != chunks_.end() && it->first.tag == tag;) {
    if (it->first.sender != sender) {
      ++it;
      continue;
    }
    while (!it->second.empty()) out.push_back(take(it->second));
    it = chunks_.erase(it);
  }
  return out;
}

void Mailbox::finish(uint32_t tag, uint64_t seq, Late late) {
  std::lock_guard lock(mutex_);
  Open& o = open_[tag];
  o.first_seq = std::max(o.first_seq, seq + 1);
  o.late = late;
  const uint64_t open = o.first_seq;
  for (auto it = chunks_.lower_bound(ChunkKey{tag, 0, ""}); it != chunks_.end() && it->first.tag == tag;) {
    if (it->first.seq >= open) {
      ++it;
      continue;
    }
    for (const auto& m : it->second) forget(m);
    it = chunks_.erase(it);
  }
}

}  // namespace gossipd::protocol
