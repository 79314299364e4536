#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace gossipd::protocol {

// Why an inbound message was dropped. The names are the `reason` label of
// gossipd_messages_rejected_total.
enum class RejectReason : size_t {
  kFrameCount,      // no frames, or a payload frame count the type does not allow
  kOversize,        // all frames together exceed max_message_bytes
  kBadEnvelope,     // frame 1 is not a parseable Envelope
  kVersion,         // protocol version differs
  kCluster,         // cluster id differs
  kUnknownSender,   // sender is not a member of the view
  kSenderMismatch,  // envelope sender differs from the transport identity
  kUnknownType,     // message type not known to this build
  kDType,           // tensor dtype unknown
  kTruncated,       // payload shorter than the envelope declares
  kSizeMismatch,    // payload longer than declared, or declared != expected
  kSegment,         // segment id / range not in the local segment table
  kStale,           // belongs to a collective that already finished
  kUnexpected,      // out of the collective's schedule (wrong step/chunk)
  kQueueFull,       // the sender has max_queued_bytes queued here already (Mailbox)
  kBadBody,         // a control body that cannot be applied: an endpoint nobody can connect to, a
                    // member id ZeroMQ cannot route to, more members than max_members
  kCodec,           // a tensor in a codec (--compress) other than the one the run agreed to
  kNonFinite,       // a tensor holding NaN or an infinity: held against its sender (RejectCounters::against)
  kCount_,
};

constexpr size_t kRejectReasonCount = static_cast<size_t>(RejectReason::kCount_);

std::string_view reject_reason_name(RejectReason reason);

// Whether a rejection for `reason` is the sender's own doing, not the
// network's or a version's: a well-formed message from a member of the view
// whose content no correct member sends (kNonFinite).
bool held_against_sender(RejectReason reason);

// Thread-safe counters, one per reason, and for the reasons held against
// the sender, one per sender.
class RejectCounters {
 public:
  void add(RejectReason reason) {
    counts_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t get(RejectReason reason) const { return counts_[static_cast<size_t>(reason)].load(); }
  uint64_t total() const;
  // (reason name, count) for every reason, zeros included, for /metrics.
  std::array<std::pair<std::string_view, uint64_t>, kRejectReasonCount> snapshot() const;

  // One more rejection held against `peer` (held_against_sender). At most
  // kMaxPeers senders are kept: past them the table starts again.
  void add_against(const std::string& peer);
  // The rejections held against each sender so far.
  std::map<std::string, uint64_t> against() const;
  static constexpr size_t kMaxPeers = 4096;

 private:
  std::array<std::atomic<uint64_t>, kRejectReasonCount> counts_{};
  mutable std::mutex against_mu_;
  std::map<std::string, uint64_t> against_;
};

// Counts every rejection and logs at most once per (peer, reason) per
// interval, so a flood of garbage cannot flood the log.
class RejectLog {
 public:
  RejectLog(std::string node_id, RejectCounters& counters,
            std::chrono::milliseconds interval = std::chrono::seconds(10))
      : node_id_(std::move(node_id)), counters_(counters), interval_(interval) {}

  void reject(const std::string& peer, RejectReason reason, std::string_view detail);
  RejectCounters& counters() { return counters_; }

 private:
  struct Entry {
    std::chrono::steady_clock::time_point last{};
    uint64_t suppressed = 0;
  };
  std::string node_id_;
  RejectCounters& counters_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::map<std::pair<std::string, RejectReason>, Entry> entries_;
};

}  // namespace gossipd::protocol
