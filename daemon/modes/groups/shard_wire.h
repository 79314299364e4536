#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "proto/gossip.pb.h"
#include "protocol/message.h"
#include "protocol/node.h"
#include "protocol/tags.h"

namespace gossipd::daemon {

// The parameter shards' messages: COLLECTIVE_CHUNKs on two tags of the
// compute groups' range, pushes and seeds to an owner on one, its answers on
// the other (the rest of the range is the groups' rings). seq is the
// group's step, `step` the ShardKind, `chunk` the shard.
constexpr uint32_t kShardRequestTag = protocol::tags::range(protocol::tags::User::kComputeGroups).at(0);
constexpr uint32_t kShardAnswerTag = protocol::tags::range(protocol::tags::User::kComputeGroups).at(1);

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
// The message's header, or nullopt (counted as a reject) when it is not a
// float shard message of a known kind.
std::optional<ShardMessage> read_shard(protocol::Node& node, const protocol::Message& m);
// Its values, copied out of the frame (a frame's bytes need not be aligned
// for floats; the validator checked it holds count of them).
std::vector<float> shard_values(const protocol::Message& m);

}  // namespace gossipd::daemon
