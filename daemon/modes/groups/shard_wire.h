#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/modes/groups/groups_wire.pb.h"
#include "proto/gossip.pb.h"
#include "protocol/collectives/segment_inbox.h"
#include "protocol/transport/node.h"
#include "protocol/wire/codec.h"
#include "protocol/wire/message.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

// The parameter shards' messages: COLLECTIVE_CHUNKs on two tags of the
// compute groups' range (Mode::tags), pushes and seeds to an owner on one,
// its answers on the other (the rest of the range is the groups' rings).
// seq is the group's step, `step` the ShardKind, `chunk` the shard.
struct ShardTags {
  uint32_t request = 0;
  uint32_t answer = 0;
};
constexpr ShardTags shard_tags(protocol::tags::Range groups) { return {groups.at(0), groups.at(1)}; }
// The tags the compute groups need (Mode::tag_count): a range of 2^24, the
// rings' tags hashed into it.
constexpr uint32_t kGroupsTagCount = uint32_t{1} << 24;

struct ShardMessage {
  proto::ShardKind kind = proto::SHARD_KIND_UNSPECIFIED;
  uint64_t step = 0;
  uint32_t shard = 0;
  proto::ShardNote note;
};

// Sends one shard message with `values` (copied); false when the peer's
// queue stayed full past `timeout` or the peer is gone (the caller resends).
bool send_shard(protocol::Node& node, const std::string& peer, uint32_t tag, const ShardMessage& m,
                std::span<const float> values, std::chrono::milliseconds timeout);
// The same with `count` floats in a frame the caller made (not copied again).
bool send_shard_frame(protocol::Node& node, const std::string& peer, uint32_t tag, const ShardMessage& m,
                      size_t count, protocol::OutFrame values, std::chrono::milliseconds timeout);
// The same with values already encoded (--compress: pushes and answers).
bool send_encoded_shard(protocol::Node& node, const std::string& peer, uint32_t tag, const ShardMessage& m,
                        const protocol::EncodedSegment& values, std::chrono::milliseconds timeout);
// The codec a kind of shard message travels in when the run agreed on
// `codec`: pushes (gradients) and answers (fresh values) in it, seeds (the
// owner's exact start) in float32.
protocol::CodecSpec shard_codec(proto::ShardKind kind, const protocol::CodecSpec& codec);
// The message's header, or nullopt (counted as a reject) when it is not a
// shard message of a known kind in the codec shard_codec gives it.
std::optional<ShardMessage> read_shard(protocol::Node& node, const protocol::Message& m,
                                       const protocol::CodecSpec& codec = {});
// Its values, decoded or copied out of the frame (a frame's bytes need not be
// aligned for floats; the validator checked it holds count of them); empty
// when a compressed frame does not decode (a non-finite scale).
std::vector<float> shard_values(const protocol::Message& m);
// The same without a copy where the frame holds plain floats at a float's
// alignment (a view of `m`'s frame, valid while `m` is); else decoded or
// copied into `scratch`, which the span then views.
std::span<const float> shard_view(const protocol::Message& m, std::vector<float>& scratch);

}  // namespace gossipd::daemon
