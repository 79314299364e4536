#include "daemon/modes/groups/shard_wire.h"

#include <cstring>
#include <vector>

#include "protocol/errors.h"

namespace gossipd::daemon {

bool send_shard(protocol::Node& node, const std::string& peer, uint32_t tag, const ShardMessage& m,
                std::span<const float> values, std::chrono::milliseconds timeout) {
  proto::Envelope env = node.envelope(proto::COLLECTIVE_CHUNK);
  env.set_collective_tag(tag);
  env.set_collective_seq(m.step);
  env.set_step(static_cast<uint32_t>(m.kind));
  env.set_chunk(m.shard);
  env.set_offset(0);
  env.set_count(values.size());
  env.set_dtype(proto::DTYPE_FLOAT32);
  *env.mutable_shard_note() = m.note;
  std::vector<protocol::OutFrame> frames;
  frames.push_back(protocol::envelope_frame(env));
  frames.push_back(protocol::OutFrame::copy_of(values.data(), values.size_bytes()));
  try {
    node.transport().send(peer, std::move(frames), timeout);
  } catch (const protocol::TransportError&) {  // a full queue or a peer that just left
    return false;
  }
  node.count_payload_sent(values.size_bytes());
  return true;
}

std::optional<ShardMessage> read_shard(protocol::Node& node, const protocol::Message& m) {
  const proto::Envelope& e = m.envelope;
  if (e.dtype() != proto::DTYPE_FLOAT32 || !e.has_shard_note() || !proto::ShardKind_IsValid(e.step()) ||
      e.step() == proto::SHARD_KIND_UNSPECIFIED || m.payload.size() != 1) {
    node.reject_log().reject(e.sender(), protocol::RejectReason::kUnexpected,
                             "compute-group shard message of kind " + std::to_string(e.step()) +
                                 " is not a float shard push, seed or answer");
    return std::nullopt;
  }
  return ShardMessage{static_cast<proto::ShardKind>(e.step()), e.collective_seq(), e.chunk(), e.shard_note()};
}

std::vector<float> shard_values(const protocol::Message& m) {
  const auto& frame = m.payload.at(0);
  std::vector<float> out(frame.size() / sizeof(float));
  std::memcpy(out.data(), frame.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace gossipd::daemon
