#include "protocol/wire/data_wire.h"

#include <cstring>

#include "protocol/wire/codec.h"
#include "protocol/wire/message.h"

namespace gossipd::protocol::wire {
namespace {

// Little-endian is asserted in message.h: a memcpy is the encoding.
template <typename T>
void put(std::byte* out, size_t& at, T v) {
  std::memcpy(out + at, &v, sizeof(T));
  at += sizeof(T);
}

template <typename T>
T get(const std::byte* in, size_t& at) {
  T v;
  std::memcpy(&v, in + at, sizeof(T));
  at += sizeof(T);
  return v;
}

}  // namespace

HeaderBytes encode(const FrameHeader& h) {
  HeaderBytes out{};
  size_t at = 0;
  put(out.data(), at, kFrameMagic);
  put(out.data(), at, static_cast<uint16_t>(h.kind));
  put(out.data(), at, h.dtype);
  put(out.data(), at, h.tag);
  put(out.data(), at, h.seq);
  put(out.data(), at, h.step);
  put(out.data(), at, h.chunk);
  put(out.data(), at, h.bytes);
  put(out.data(), at, h.codec_block);
  return out;
}

Decoded decode(std::span<const std::byte, kFrameHeaderBytes> in, uint64_t max_bytes) {
  Decoded d;
  size_t at = 0;
  if (get<uint32_t>(in.data(), at) != kFrameMagic) {
    d.detail = "data frame without its magic number";
    return d;
  }
  FrameHeader h;
  const auto kind = get<uint16_t>(in.data(), at);
  h.dtype = get<uint16_t>(in.data(), at);
  h.tag = get<uint32_t>(in.data(), at);
  h.seq = get<uint64_t>(in.data(), at);
  h.step = get<uint32_t>(in.data(), at);
  h.chunk = get<uint32_t>(in.data(), at);
  h.bytes = get<uint64_t>(in.data(), at);
  h.codec_block = get<uint32_t>(in.data(), at);
  if (kind < static_cast<uint16_t>(FrameKind::kPiece) || kind > kLastFrameKind) {
    d.reason = RejectReason::kUnknownType;
    d.detail = "data frame kind " + std::to_string(kind);
    return d;
  }
  h.kind = static_cast<FrameKind>(kind);
  const auto dtype = static_cast<proto::DType>(h.dtype);
  size_t element = dtype_size(dtype);
  if (element == 0 && spec_of(dtype, h.codec_block)) element = 1;  // compressed: bytes
  if (dtype == proto::DTYPE_INT8_BLOCKS && element == 0) {
    d.reason = RejectReason::kCodec;
    d.detail = "data frame int8 block of " + std::to_string(h.codec_block) + ": " +
               int8_block_problem(h.codec_block);
    return d;
  }
  if (element == 0) {
    d.reason = RejectReason::kDType;
    d.detail = "data frame dtype " + std::to_string(h.dtype);
    return d;
  }
  if (h.bytes > max_bytes) {
    d.reason = RejectReason::kOversize;
    d.detail = "data frame of " + std::to_string(h.bytes) + " bytes, limit " + std::to_string(max_bytes);
    return d;
  }
  if (h.bytes % element != 0) {
    d.reason = RejectReason::kSizeMismatch;
    d.detail = "data frame of " + std::to_string(h.bytes) + " bytes is not whole elements";
    return d;
  }
  d.header = h;
  return d;
}

std::vector<std::byte> encode_hello(const Hello& h) {
  const size_t c = std::min(h.cluster_id.size(), kMaxHelloString);
  const size_t s = std::min(h.sender.size(), kMaxHelloString);
  std::vector<std::byte> out(kHelloFixedBytes + c + s);
  size_t at = 0;
  put(out.data(), at, kHelloMagic);
  put(out.data(), at, h.version);
  put(out.data(), at, h.nonce);
  put(out.data(), at, static_cast<uint16_t>(c));
  put(out.data(), at, static_cast<uint16_t>(s));
  std::memcpy(out.data() + at, h.cluster_id.data(), c);
  std::memcpy(out.data() + at + c, h.sender.data(), s);
  return out;
}

std::optional<size_t> hello_length(std::span<const std::byte, kHelloFixedBytes> fixed) {
  size_t at = 0;
  if (get<uint32_t>(fixed.data(), at) != kHelloMagic) return std::nullopt;
  at = 16;
  const size_t c = get<uint16_t>(fixed.data(), at);
  const size_t s = get<uint16_t>(fixed.data(), at);
  if (c > kMaxHelloString || s > kMaxHelloString || s == 0) return std::nullopt;
  return kHelloFixedBytes + c + s;
}

std::optional<Hello> decode_hello(std::span<const std::byte> all) {
  if (all.size() < kHelloFixedBytes) return std::nullopt;
  const auto total = hello_length(all.first<kHelloFixedBytes>());
  if (!total || *total != all.size()) return std::nullopt;
  Hello h;
  size_t at = 4;
  h.version = get<uint32_t>(all.data(), at);
  h.nonce = get<uint64_t>(all.data(), at);
  const size_t c = get<uint16_t>(all.data(), at);
  const size_t s = get<uint16_t>(all.data(), at);
  const auto* text = reinterpret_cast<const char*>(all.data() + at);
  h.cluster_id.assign(text, c);
  h.sender.assign(text + c, s);
  return h;
}

std::array<std::byte, kAnnouncementBytes> encode(const Announcement& a) {
  std::array<std::byte, kAnnouncementBytes> out{};
  size_t at = 0;
  put(out.data(), at, a.nonce);
  put(out.data(), at, a.port);
  return out;
}

std::optional<Announcement> decode_announcement(std::span<const std::byte> in) {
  if (in.size() != kAnnouncementBytes) return std::nullopt;
  Announcement a;
  size_t at = 0;
  a.nonce = get<uint64_t>(in.data(), at);
  a.port = get<uint16_t>(in.data(), at);
  if (a.port == 0) return std::nullopt;
  return a;
}

}  // namespace gossipd::protocol::wire
