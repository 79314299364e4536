#pragma once

#include <bit>
#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::protocol {

static_assert(std::endian::native == std::endian::little, "payload frames are raw little-endian");

// 2: membership by SWIM probes (PING, ACK, PING_REQ carrying updates)
// instead of every member's full table to every member.
constexpr uint32_t kProtocolVersion = 2;

// Bytes per element of a dtype; 0 for unknown ones.
size_t dtype_size(proto::DType dtype);

// dst[i] += src[i]; src is a float32 payload of any alignment.
void add_floats(float* dst, const std::byte* src, size_t count);

// True for the types whose payload is exactly one tensor frame.
bool is_tensor_type(proto::MessageType type);

// One frame to send. `owner` keeps the bytes alive until the transport has
// written them: the transport drops its reference when done (zero-copy).
struct OutFrame {
  const void* data = nullptr;
  size_t size = 0;
  std::shared_ptr<const void> owner;

  static OutFrame copy_of(const void* data, size_t size);
  static OutFrame from_string(std::string bytes);
  // Borrowed bytes: `owner` must guarantee they stay valid and unmodified
  // until it is released.
  static OutFrame borrowed(const void* data, size_t size, std::shared_ptr<const void> owner);
};

// One received frame; keeps its bytes alive (a transport's receive buffer or
// a heap buffer) so a collective can reduce straight from it without a copy.
// Which transport's buffer it is stays behind the transport.
class Frame {
 public:
  Frame() = default;
  explicit Frame(std::vector<std::byte> bytes);
  // `size` bytes at `data`, valid while `owner` lives.
  Frame(const std::byte* data, size_t size, std::shared_ptr<const void> owner)
      : owner_(std::move(owner)), data_(data), size_(size) {}

  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::shared_ptr<const void> owner_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Frames as the transport delivered them, before validation. `peer` is the
// transport-level identity (the ZeroMQ routing id).
struct RawMessage {
  std::string peer;
  std::vector<Frame> frames;
};

// A validated message: envelope parsed and checked, payload sized as declared.
struct Message {
  proto::Envelope envelope;
  std::vector<Frame> payload;
  // When this node's mailbox took it (Mailbox::push): a gossip round learns
  // its segment deadlines from these (gossip/segment_deadlines.h).
  std::chrono::steady_clock::time_point arrived{};

  std::span<const std::byte> bytes(size_t frame = 0) const {
    return {payload.at(frame).data(), payload.at(frame).size()};
  }
};

// Serialises an envelope into the first frame of a message.
OutFrame envelope_frame(const proto::Envelope& envelope);

}  // namespace gossipd::protocol
