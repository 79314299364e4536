#include "protocol/wire/reject_counters.h"

#include <spdlog/spdlog.h>

namespace gossipd::protocol {

std::string_view reject_reason_name(RejectReason reason) {
  switch (reason) {
    case RejectReason::kFrameCount:
      return "frame_count";
    case RejectReason::kOversize:
      return "oversize";
    case RejectReason::kBadEnvelope:
      return "bad_envelope";
    case RejectReason::kVersion:
      return "version";
    case RejectReason::kCluster:
      return "cluster";
    case RejectReason::kUnknownSender:
      return "unknown_sender";
    case RejectReason::kSenderMismatch:
      return "sender_mismatch";
    case RejectReason::kUnknownType:
      return "unknown_type";
    case RejectReason::kDType:
      return "dtype";
    case RejectReason::kTruncated:
      return "truncated";
    case RejectReason::kSizeMismatch:
      return "size_mismatch";
    case RejectReason::kSegment:
      return "segment";
    case RejectReason::kStale:
      return "stale";
    case RejectReason::kUnexpected:
      return "unexpected";
    case RejectReason::kBadBody:
      return "bad_body";
    case RejectReason::kQueueFull:
      return "queue_full";
    case RejectReason::kCodec:
      return "codec";
    case RejectReason::kNonFinite:
      return "non_finite";
    case RejectReason::kCount_:
      break;
  }
  return "unknown";
}

uint64_t RejectCounters::total() const {
  uint64_t t = 0;
  for (const auto& c : counts_) t += c.load();
  return t;
}

std::array<std::pair<std::string_view, uint64_t>, kRejectReasonCount> RejectCounters::snapshot() const {
  std::array<std::pair<std::string_view, uint64_t>, kRejectReasonCount> out;
  for (size_t i = 0; i < kRejectReasonCount; ++i) {
    out[i] = {reject_reason_name(static_cast<RejectReason>(i)), counts_[i].load()};
  }
  return out;
}

bool held_against_sender(RejectReason reason) { return reason == RejectReason::kNonFinite; }

void RejectCounters::add_against(const std::string& peer) {
  std::lock_guard lock(against_mu_);
  if (against_.size() >= kMaxPeers && !against_.contains(peer)) against_.clear();
  ++against_[peer];
}

std::map<std::string, uint64_t> RejectCounters::against() const {
  std::lock_guard lock(against_mu_);
  return against_;
}

void RejectLog::reject(const std::string& peer, RejectReason reason, std::string_view detail) {
  counters_.add(reason);
  if (held_against_sender(reason)) counters_.add_against(peer);
  const auto now = std::chrono::steady_clock::now();
  uint64_t suppressed = 0;
  {
    std::lock_guard lock(mutex_);
    if (entries_.size() >= 4096) entries_.clear();  // ids are peer-chosen; stay bounded
    auto& e = entries_[{peer, reason}];
    if (e.last.time_since_epoch().count() != 0 && now - e.last < interval_) {
      ++e.suppressed;
      return;
    }
    suppressed = e.suppressed;
    e = Entry{now, 0};
  }
  spdlog::warn("node '{}': dropped message from '{}': {} ({}){}", node_id_, peer, reject_reason_name(reason),
               detail, suppressed ? fmt::format(", {} more since last report", suppressed) : std::string());
}

}  // namespace gossipd::protocol
