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
#include <vector>

#include "protocol/wire/message.h"
#include "protocol/wire/reject_counters.h"

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
//
// Bounded per sender: the bytes one sender has queued (payload and envelope)
// never exceed max_queued_bytes; what would go beyond is dropped and counted
// as queue_full, so a peer that races ahead or floods cannot grow this
// node's memory without bound. A control queue keeps its newest
// max_control_queue messages.
class Mailbox {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Mailbox(RejectLog& log, size_t max_control_queue = 10000,
                   size_t max_queued_bytes = size_t{1} << 30)
      : log_(log), max_control_(max_control_queue), max_queued_bytes_(max_queued_bytes) {}

  void push(Message msg);

  // The next chunk for `key`; nullopt at the deadline or when `stop` fires.
  std::optional<Message> pop_chunk(const ChunkKey& key, Clock::time_point deadline, std::stop_token stop);
  // The next control message of `type`; nullopt at the deadline or on stop.
  std::optional<Message> pop(proto::MessageType type, Clock::time_point deadline, std::stop_token stop);
  // The next control message of any of `types` (earlier types first).
  std::optional<Message> pop_any(std::span<const proto::MessageType> types, Clock::time_point deadline,
                                 std::stop_token stop);

  // The next chunk of `tag`, whatever its seq and sender (a server taking
  // requests from anyone); nullopt at the deadline or when `stop` fires.
  std::optional<Message> pop_tag(uint32_t tag, Clock::time_point deadline, std::stop_token stop);

  // Every chunk queued for `tag` from `sender`, whatever its seq, oldest seq
  // first, without waiting (an asynchronous exchange that takes the newest
  // copy of whatever arrived, in no lockstep with its sender).
  std::vector<Message> drain(uint32_t tag, const std::string& sender);

  // How finish() treats what arrives late for a finished call: counted as a
  // stale reject, or dropped quietly where late copies are expected (notes
  // that their senders repeat on purpose).
  enum class Late { kStale, kExpected };
  // A collective call ended (done or failed): drop what is queued for it, and
  // drop anything arriving later for it (or an earlier call), counting it as
  // `late` says.
  void finish(uint32_t tag, uint64_t seq, Late late = Late::kStale);

  // Bytes queued from `sender` now.
  size_t queued_bytes(const std::string& sender) const;

 private:
  Message take(std::deque<Message>& q);  // pops the front, with mutex_ held
  void forget(const Message& m);         // un-counts a dropped message, with mutex_ held

  RejectLog& log_;
  size_t max_control_;
  size_t max_queued_bytes_;
  std::map<std::string, size_t> queued_;  // sender -> bytes
  mutable std::mutex mutex_;
  std::condition_variable_any cv_;
  std::map<ChunkKey, std::deque<Message>> chunks_;
  struct Open {
    uint64_t first_seq = 0;  // calls before it are finished
    Late late = Late::kStale;
  };
  std::map<uint32_t, Open> open_;  // per tag
  std::map<int, std::deque<Message>> control_;
};

}  // namespace gossipd::protocol
