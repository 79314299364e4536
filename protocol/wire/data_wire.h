#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/wire/reject_counters.h"

namespace gossipd::protocol::wire {

// The direct data path's framing (protocol/collectives/data_link.h). Everything is
// little-endian; payload bytes follow their header unchanged.
//
// A connection starts with a Hello from the side that connected and a
// one-byte Ack from the side that accepted; then each direction is a stream
// of frames, a fixed FrameHeader then `bytes` of payload.

enum class FrameKind : uint16_t {
  kPiece = 1,   // a piece of a collective call: seq = call, (step, chunk) in its schedule
  kTensor = 2,  // a point-to-point tensor: seq = the caller's key, step = chunk = 0
  // Moving the link onto shared memory (DataLink, members on one host), in
  // bytes (DTYPE_UINT8):
  kShmOffer = 3,   // the accepting side's segment: its pipes' capacity (u64), then its name
  kShmSwitch = 4,  // no payload: this side's later frames come through the segment
  kShmRefuse = 5,  // no payload: the offer is declined, the link stays on the socket
};
constexpr uint16_t kLastFrameKind = 5;

struct FrameHeader {
  FrameKind kind = FrameKind::kPiece;
  uint16_t dtype = 0;  // proto::DType
  uint32_t tag = 0;    // the group's tag
  uint64_t seq = 0;
  uint32_t step = 0;
  uint32_t chunk = 0;
  uint64_t bytes = 0;        // payload bytes that follow
  uint32_t codec_block = 0;  // DTYPE_INT8_BLOCKS: values per scale (codec.h); 0 otherwise
};

constexpr uint32_t kFrameMagic = 0x31504447;  // "GDP1"
constexpr size_t kFrameHeaderBytes = 40;
using HeaderBytes = std::array<std::byte, kFrameHeaderBytes>;

HeaderBytes encode(const FrameHeader& header);

// A header, or why it is refused: bad magic (kBadEnvelope), unknown kind
// (kUnknownType), unknown dtype (kDType), an int8 block that does not fit
// (kCodec), more than `max_bytes` or not a whole number of elements
// (kOversize / kSizeMismatch; a compressed dtype's elements are bytes, the
// receiver checks the length against the count it expects).
struct Decoded {
  std::optional<FrameHeader> header;
  RejectReason reason = RejectReason::kBadEnvelope;
  std::string detail;
};
Decoded decode(std::span<const std::byte, kFrameHeaderBytes> in, uint64_t max_bytes);

// First bytes on a new connection. `nonce` is the one the accepting side
// announced to this sender over the control channel for this connection.
struct Hello {
  uint32_t version = 0;
  uint64_t nonce = 0;
  std::string cluster_id;
  std::string sender;
};

constexpr uint32_t kHelloMagic = 0x48504447;  // "GDPH"
constexpr size_t kHelloFixedBytes = 20;       // magic, version, nonce, two u16 lengths
constexpr size_t kMaxHelloString = 255;
constexpr std::byte kAck{0x5a};

std::vector<std::byte> encode_hello(const Hello& hello);
// The whole hello's length from its fixed part, or nullopt (bad magic or
// a string longer than kMaxHelloString).
std::optional<size_t> hello_length(std::span<const std::byte, kHelloFixedBytes> fixed);
// nullopt when `all` is not exactly one well-formed hello.
std::optional<Hello> decode_hello(std::span<const std::byte> all);

// What the accepting side announces over the control channel: where to
// connect (the port; the host is the one its control endpoint names) and the
// nonce to present.
struct Announcement {
  uint64_t nonce = 0;
  uint16_t port = 0;
};
constexpr size_t kAnnouncementBytes = 10;
std::array<std::byte, kAnnouncementBytes> encode(const Announcement& a);
std::optional<Announcement> decode_announcement(std::span<const std::byte> in);

}  // namespace gossipd::protocol::wire
