#include "daemon/modes/groups/shard_wire.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "protocol/wire/errors.h"

namespace gossipd::daemon {

namespace {

bool send_frames(protocol::Node& node, const std::string& peer, uint32_t tag, const ShardMessage& m,
                 const protocol::CodecSpec& spec, size_t count, protocol::OutFrame payload,
                 std::chrono::milliseconds timeout) {
  proto::Envelope env = node.envelope(proto::COLLECTIVE_CHUNK);
  env.set_collective_tag(tag);
  env.set_collective_seq(m.step);
  env.set_step(static_cast<uint32_t>(m.kind));
  env.set_chunk(m.shard);
  env.set_offset(0);
  env.set_count(count);
  env.set_dtype(protocol::codec_dtype(spec.codec));
  if (spec.codec == protocol::Codec::kInt8) env.set_codec_block(spec.block);
  env.set_mode_note(m.note.SerializeAsString());
  const size_t bytes = payload.size;
  std::vector<protocol::OutFrame> frames;
  frames.push_back(protocol::envelope_frame(env));
  frames.push_back(std::move(payload));
  try {
    node.transport().send(peer, std::move(frames), timeout);
  } catch (const protocol::TransportError&) {  // a full queue or a peer that just left
    return false;
  }
  node.count_payload_sent(bytes);
  return true;
}

}  // namespace

bool send_shard_frame(protocol::Node& node, const std::string& peer, uint32_t tag, const ShardMessage& m,
                      size_t count, protocol::OutFrame values, std::chrono::milliseconds timeout) {
  return send_frames(node, peer, tag, m, {}, count, std::move(values), timeout);
}

bool send_shard(protocol::Node& node, const std::string& peer, uint32_t tag, const ShardMessage& m,
                std::span<const float> values, std::chrono::milliseconds timeout) {
  return send_frames(node, peer, tag, m, {}, values.size(),
                     protocol::OutFrame::copy_of(values.data(), values.size_bytes()), timeout);
}

bool send_encoded_shard(protocol::Node& node, const std::string& peer, uint32_t tag, const ShardMessage& m,
                        const protocol::EncodedSegment& values, std::chrono::milliseconds timeout) {
  const auto& bytes = *values.bytes;
  return send_frames(node, peer, tag, m, values.spec, values.count,
                     protocol::OutFrame::borrowed(bytes.data(), bytes.size(), values.bytes), timeout);
}

protocol::CodecSpec shard_codec(proto::ShardKind kind, const protocol::CodecSpec& codec) {
  return kind == proto::SHARD_PUSH || kind == proto::SHARD_FRESH ? codec : protocol::CodecSpec{};
}

std::optional<ShardMessage> read_shard(protocol::Node& node, const protocol::Message& m,
                                       const protocol::CodecSpec& codec) {
  const proto::Envelope& e = m.envelope;
  proto::ShardNote note;
  if (!e.has_mode_note() || !note.ParseFromString(e.mode_note()) || !proto::ShardKind_IsValid(e.step()) ||
      e.step() == proto::SHARD_KIND_UNSPECIFIED || m.payload.size() != 1) {
    node.reject_log().reject(e.sender(), protocol::RejectReason::kUnexpected,
                             "compute-group shard message of kind " + std::to_string(e.step()) +
                                 " is not a shard push, seed or answer");
    return std::nullopt;
  }
  const auto kind = static_cast<proto::ShardKind>(e.step());
  const protocol::CodecSpec agreed = shard_codec(kind, codec);
  const std::optional<protocol::CodecSpec> sent = protocol::declared_spec(e);
  if (!sent || !(*sent == agreed)) {
    node.reject_log().reject(e.sender(), protocol::RejectReason::kCodec,
                             "shard message of kind " + std::to_string(kind) + " in dtype " +
                                 std::to_string(e.dtype()) + ", agreed on " + protocol::spec_name(agreed));
    return std::nullopt;
  }
  return ShardMessage{kind, e.collective_seq(), e.chunk(), note};
}

std::span<const float> shard_view(const protocol::Message& m, std::vector<float>& scratch) {
  const auto& frame = m.payload.at(0);
  const std::optional<protocol::CodecSpec> spec = protocol::declared_spec(m.envelope);
  if (spec && !spec->lossless()) {
    scratch.resize(m.envelope.count());
    if (!protocol::decode(*spec, m.bytes(), scratch)) return {};
    return scratch;
  }
  const size_t n = frame.size() / sizeof(float);
  // An empty frame's data() may be null, and memcpy from null is undefined
  // even for no bytes (fuzz_shard found one).
  if (n == 0) return {};
  if (reinterpret_cast<std::uintptr_t>(frame.data()) % alignof(float) == 0)
    return {reinterpret_cast<const float*>(frame.data()), n};
  scratch.resize(n);
  std::memcpy(scratch.data(), frame.data(), n * sizeof(float));
  return scratch;
}

std::vector<float> shard_values(const protocol::Message& m) {
  std::vector<float> scratch;
  const std::span<const float> v = shard_view(m, scratch);
  if (v.data() == scratch.data()) return scratch;
  return {v.begin(), v.end()};
}

}  // namespace gossipd::daemon
