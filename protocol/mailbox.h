#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <tuple>

#include "protocol/message.h"
#include "protocol/reject_counters.h"

namespace gossipd::protocol {

// Identifies the inbound stream of one collective call from one peer.
// Messages of one key arrive in order (one DEALER->ROUTER pipe).
struct ChunkKey {
  uint32_t tag = 0;
  uint64_t seq = 0;
  std::string sender;
  auto operator<=>(const ChunkKey&) const = default;
};

// Demultiplexes validated messages so that concurrent collectives (several
// groups, successive calls) and the control plane never take each other's
// messages: collective chunks and gossip segments by (tag, seq, sender) —
// for a segment seq is the gossip round — the rest by type.
class Mailbox {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Mailbox(RejectLog& log, size_t max_control_queue = 10000) : log_(log), max_control_(max_control_queue) {}

  void push(Message msg);

  // The next chunk for `key`; nullopt at the deadline or when `stop` fires.
  std::optional<Message> pop_chunk(const ChunkKey& key, Clock::time_point deadline, std::stop_token stop);
  // The next control message of `type`; nullopt at the deadline or on stop.
  std::optional<Message> pop(proto::MessageType type, Clock::time_point deadline, std::stop_token stop);
  // The next control message of any of `types` (earlier types first).
  std::optional<Message> pop_any(std::span<const proto::MessageType> types, Clock::time_point deadline,
                                 std::stop_token stop);

  // A collective call ended (done or failed): drop what is queued for it, and
  // count anything arriving later for it (or an earlier call) as stale.
  void finish(uint32_t tag, uint64_t seq);

 private:
  RejectLog& log_;
  size_t max_control_;
  std::mutex mutex_;
  std::condition_variable_any cv_;
  std::map<ChunkKey, std::deque<Message>> chunks_;
  std::map<uint32_t, uint64_t> first_open_seq_;  // per tag
  std::map<int, std::deque<Message>> control_;
};

}  // namespace gossipd::protocol
