#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "protocol/collectives/segment_table.h"
#include "protocol/wire/codec.h"

namespace gossipd::daemon {

// What gossipctl simulate's time model (daemon/sim/time_model.h) asks a
// mode: what one round of it sends between the members, as stages run one
// after the other. The mode answers with its own topology functions (pure
// functions of the members, the seed and the round), so the simulator prices
// the daemon's traffic without a copy of its protocols.

// One message: member indices in TrafficContext::members' order.
struct Transfer {
  uint32_t from = 0;
  uint32_t to = 0;
  uint64_t bytes = 0;    // what the wire carries: payload and envelope
  uint32_t segment = 0;  // the segment it carries (a skipped one is named by it)
};

struct TrafficStage {
  enum class Kind {
    // Point to point: a member sends its messages one after the other on its
    // link, and its stage ends once what it was sent has arrived (or its
    // segment deadline passed: the rest is skipped).
    kMessages,
    // Allreduces, one per group of `groups`, of allreduce_bytes each, as
    // protocol::Allreduce runs them (the schedule it picks for the size);
    // a group's members wait for each other.
    kAllreduce,
  };
  Kind kind = Kind::kMessages;
  std::vector<Transfer> messages;  // kMessages, each sender's in its order
  // kMessages: what a member is sent in this round it waits for in the next
  // one (OSGP folds the previous round's pushes).
  bool folded_next_round = false;
  // kMessages, gossipd run --pace: a message leaves only once its receiver
  // is in this round's exchange and said so (the sender's next ones wait
  // behind it); kAfterLast: first the sender waits (up to an eighth of its
  // deadline) until those it sent to in the last round are in this one.
  enum class Pace { kNone, kReceiver, kAfterLast };
  Pace pace = Pace::kNone;
  std::vector<std::vector<uint32_t>> groups;  // kAllreduce: member indices
  uint64_t allreduce_bytes = 0;               // kAllreduce: its float32 bytes
  // kAllreduce: a lossy codec runs protocol::CompressedAllreduce (the ring,
  // allreduce_bytes in the codec) instead.
  protocol::CodecSpec allreduce_codec{};
};

struct TrafficContext {
  std::vector<std::string> members;  // ids, in the view's order (sorted)
  std::vector<std::string> labels;   // each member's --group ("": none)
  protocol::SegmentTable segments;
  uint64_t seed = 1;
};

class RoundTraffic {
 public:
  virtual ~RoundTraffic() = default;
  // The stages of round `round` (rounds count from 1, as the daemon's).
  virtual std::vector<TrafficStage> round(uint64_t round) const = 0;
};

// A segment message's envelope as the model counts it (proto::Envelope
// with a sender id, the cluster's id and the segment's fields: 60 to 100
// bytes), beside its floats.
constexpr uint64_t kModelledEnvelopeBytes = 96;

// A segment's message in `codec` (--compress): its payload and envelope.
inline uint64_t segment_message_bytes(const protocol::SegmentRange& s,
                                      const protocol::CodecSpec& codec = {}) {
  return protocol::encoded_bytes(codec, s.length) + kModelledEnvelopeBytes;
}

// The whole model's float32 bytes.
inline uint64_t model_bytes(const protocol::SegmentTable& segments) {
  uint64_t floats = 0;
  for (const auto& s : segments) floats += s.length;
  return floats * sizeof(float);
}

// One allreduce over every member, of `bytes` float32 bytes, in `codec`.
TrafficStage one_allreduce(size_t members, uint64_t bytes, const protocol::CodecSpec& codec = {});

}  // namespace gossipd::daemon
