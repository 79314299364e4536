#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "protocol/collectives/segment_table.h"
#include "protocol/transport/node.h"
#include "protocol/wire/codec.h"

namespace gossipd::protocol {

// A segment as it goes on the wire: `count` values in `spec`, shared by every
// peer it is sent to (error_feedback.h makes them).
struct EncodedSegment {
  CodecSpec spec;
  size_t count = 0;
  std::shared_ptr<const std::vector<std::byte>> bytes;
};

// The SEGMENT messages of one gossip round of one protocol (tag). Sends are
// copies: a round never waits for a slow or dead peer's socket to let go of
// the parameters, and the caller may average into them at once. Receives are
// per (sender, segment); a sender's segments arrive in the order it sent
// them, and one that overtook a lost one is kept until asked for. On
// destruction the round is finished: whatever arrives for it later is
// dropped and counted as stale (a late pacing note only dropped). Segments
// in a codec other than `codec` (what the run agreed to) are dropped and
// counted (kCodec); compressed ones are handed out decoded, as float32.
// A segment holding NaN or an infinity is dropped, as if lost, and held
// against its sender (kNonFinite): one would spread to every replica.
class SegmentInbox {
 public:
  // `finish` false: leave the round open on destruction (a sender whose
  // round is received later, as overlapped SGP does).
  SegmentInbox(Node& node, uint32_t tag, uint64_t round, bool finish = true, CodecSpec codec = {});
  ~SegmentInbox();
  SegmentInbox(const SegmentInbox&) = delete;
  SegmentInbox& operator=(const SegmentInbox&) = delete;

  // Sends `data` as segment `segment` to `peer`; a push-sum weight and the
  // sender's training step ride in the envelope when given. Returns the bytes
  // put on the wire, 0 when the peer's queue stayed full past `timeout` (the
  // segment is then skipped).
  size_t send(const std::string& peer, uint32_t segment, std::span<const float> data,
              std::optional<double> weight, std::chrono::milliseconds timeout,
              std::optional<uint64_t> sender_step = std::nullopt);
  // The same for a segment already encoded (its spec may differ from the
  // inbox's: a test's hostile peer).
  size_t send(const std::string& peer, uint32_t segment, const EncodedSegment& data,
              std::optional<double> weight, std::chrono::milliseconds timeout,
              std::optional<uint64_t> sender_step = std::nullopt);

  // Segment `segment` from `peer`, or nullopt at `deadline` or on stop (at
  // once where the transport's modelled network lost it: modelled_losses.h).
  // A message of the wrong length is dropped and counted. With `renudge`
  // above zero, repeats every announce_ready of this round each time that
  // long passes without the segment (a note may have been lost, and the
  // sender it was for may be waiting on it).
  std::optional<Message> receive(const std::string& peer, uint32_t segment, size_t count,
                                 std::chrono::steady_clock::time_point deadline, std::stop_token stop,
                                 std::chrono::milliseconds renudge = std::chrono::milliseconds(0));

  uint64_t round() const { return round_; }
  // Whether `peer`'s segment `segment` was refused for holding NaN or an
  // infinity (receive returned nullopt for it).
  bool refused_non_finite(const std::string& peer, uint32_t segment) const {
    return refused_.contains({peer, segment});
  }

  // Pacing (GossipOptions::pace): tells `peer` that this node is in this
  // round, so it may send its segments now.
  void announce_ready(const std::string& peer);
  // Waits until `peer` has announced this round; false at `deadline` or on
  // stop. Each peer is waited for once per round. `renudge` as for receive.
  bool await_ready(const std::string& peer, std::chrono::steady_clock::time_point deadline,
                   std::stop_token stop, std::chrono::milliseconds renudge = std::chrono::milliseconds(0));

 private:
  void send_note(const std::string& peer);  // one "ready" note, not recorded
  size_t send_frame(const std::string& peer, uint32_t segment, size_t count, CodecSpec spec, OutFrame payload,
                    std::optional<double> weight, std::chrono::milliseconds timeout,
                    std::optional<uint64_t> sender_step);
  // `msg` if it is segment `segment` of `count` values in the agreed codec
  // (decoded); else rejected and counted.
  std::optional<Message> accept(const std::string& peer, uint32_t segment, size_t count, Message msg);
  // An accepted `msg` if its values are all finite; else rejected as
  // kNonFinite (held against `peer`) and nullopt: the segment is skipped.
  std::optional<Message> finite(const std::string& peer, uint32_t segment, Message msg);
  // The next message of `key`, repeating our notes every `renudge` meanwhile.
  std::optional<Message> pop(const ChunkKey& key, std::chrono::steady_clock::time_point deadline,
                             std::stop_token stop, std::chrono::milliseconds renudge);

  Node& node_;
  uint32_t tag_;
  uint64_t round_;
  bool finish_;
  CodecSpec codec_;
  std::map<std::pair<std::string, uint32_t>, Message> early_;
  std::set<std::string> ready_;                         // peers that announced this round
  std::set<std::string> announced_;                     // peers this node announced this round to
  std::set<std::pair<std::string, uint32_t>> refused_;  // (peer, segment) refused as non-finite
};

}  // namespace gossipd::protocol
