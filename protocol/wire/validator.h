#pragma once

#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "protocol/wire/message.h"
#include "protocol/wire/reject_counters.h"

namespace gossipd::protocol {

// The most membership updates one probe may carry (a member piggybacks far fewer).
constexpr size_t kMaxProbeUpdates = 64;
constexpr size_t kMaxProbePadding = 64 * 1024;  // bytes a measuring PING (or its ACK) may carry
// A joiner asks for at most this many shares of a state (HELLO's share.of).
constexpr uint32_t kMaxStateShares = 64;

struct ValidatorOptions {
  std::string cluster_id = "gossipd";
  uint32_t version = kProtocolVersion;
  size_t max_message_bytes = size_t{256} << 20;  // all frames together (--max-message-bytes)
  size_t max_members = 1024;                     // longest member list accepted (--max-members)
};

// Checks every inbound message before anything is applied: frame count,
// total size, envelope, version, cluster, sender membership and identity,
// type, dtype, payload size against the envelope and the segment table, and
// the control bodies (endpoints, member ids, list length).
// Thread-safe; the member set and segment table change with the view.
class Validator {
 public:
  Validator(ValidatorOptions options, RejectLog& log) : options_(std::move(options)), log_(log) {}

  void set_members(const std::vector<std::string>& members);
  void add_member(const std::string& member);
  void remove_member(const std::string& member);
  bool is_member(const std::string& member) const;
  // Types accepted from senders that are not members: HELLO on a member
  // (anyone may ask to join; CURVE, when on, has already authenticated the
  // connection), MEMBER_LIST and STATE_CHUNK on a joiner until it knows its
  // contact's id. Empty by default.
  void set_open_types(std::set<proto::MessageType> types);
  // Lengths (in elements) of the local segments, indexed by segment id.
  void set_segment_lengths(std::vector<uint64_t> lengths);

  // The parsed message, or nullopt when it was dropped (counted and logged).
  std::optional<Message> validate(RawMessage raw);

  const ValidatorOptions& options() const { return options_; }
  RejectLog& log() { return log_; }

 private:
  std::optional<RejectReason> check_header(const RawMessage& raw, const proto::Envelope& env,
                                           std::string* why) const;
  std::optional<RejectReason> check_payload(const RawMessage& raw, const proto::Envelope& env,
                                            std::string* why) const;
  std::optional<RejectReason> check_body(const proto::Envelope& env, std::string* why) const;

  ValidatorOptions options_;
  RejectLog& log_;
  mutable std::shared_mutex mutex_;
  std::set<std::string> members_;
  std::set<proto::MessageType> open_types_;
  std::vector<uint64_t> segment_lengths_;
};

}  // namespace gossipd::protocol
