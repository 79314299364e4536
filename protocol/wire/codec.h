#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::protocol {

// How a float32 tensor travels (--compress): as it is, as IEEE half or
// bfloat16 (2 bytes a value, rounded to nearest even), or as int8 in blocks
// of `block` values with one float32 scale per block (max |x| / 127, rounded
// to nearest). Every member encodes the same values the same way.
enum class Codec : uint8_t { kNone, kFp16, kBf16, kInt8 };

constexpr uint32_t kMinInt8Block = 16;
constexpr uint32_t kMaxInt8Block = 65536;
constexpr uint32_t kDefaultInt8Block = 256;  // a scale costs 4 / 256 = 1.6% of the int8 bytes

struct CodecSpec {
  Codec codec = Codec::kNone;
  uint32_t block = kDefaultInt8Block;  // int8 only
  bool lossless() const { return codec == Codec::kNone; }
  bool operator==(const CodecSpec& o) const {
    return codec == o.codec && (codec != Codec::kInt8 || block == o.block);
  }
};

// "none", "fp16", "bf16", "int8"; nullopt for anything else.
std::optional<Codec> parse_codec(std::string_view name);
std::string codec_name(Codec codec);
// "int8/256" for int8, the name otherwise: how logs and rejects name a spec.
std::string spec_name(const CodecSpec& spec);
// "none", "fp16", "bf16", "int8" or "int8/BLOCK" into *out; returns the
// one-line problem ("" when it parsed).
std::string parse_spec(std::string_view text, CodecSpec* out);
// Empty when `block` fits int8's blocks, else the one-line problem.
std::string int8_block_problem(uint64_t block);

// The dtype on the wire: DTYPE_FLOAT32 for kNone.
proto::DType codec_dtype(Codec codec);
// The spec a message's envelope declares; nullopt for a dtype no codec
// writes (float64, uint8) or an int8 block that does not fit.
std::optional<CodecSpec> declared_spec(const proto::Envelope& env);
// Bytes `count` values take on the wire in `spec`.
size_t encoded_bytes(const CodecSpec& spec, size_t count);
// The count whose encoding in `spec` is `bytes` long; nullopt when none is
// (a frame that carries bytes, not a count: the direct data path's).
std::optional<size_t> decoded_count(const CodecSpec& spec, size_t bytes);
// The spec a dtype (and int8 block) names; nullopt as for declared_spec.
std::optional<CodecSpec> spec_of(proto::DType dtype, uint32_t block);

// The payload of x + carry (carry empty, or as long as x).
std::vector<std::byte> encode(const CodecSpec& spec, std::span<const float> x,
                              std::span<const float> carry = {});
// out ← the values `in` holds; false (out unspecified) when `in` is not
// encoded_bytes(spec, out.size()) long or an int8 scale is not a finite
// non-negative number.
bool decode(const CodecSpec& spec, std::span<const std::byte> in, std::span<float> out);

// True when every float32 in `values` (read as bytes: a frame's payload need
// not be aligned) is a finite number, no NaN and no infinity. What a
// receiver checks before it averages a tensor in: one such value would
// spread to every replica.
bool all_finite(std::span<const std::byte> values);

// One value each way, for tests and the codec's own loops.
uint16_t to_half(float f);
float from_half(uint16_t h);
uint16_t to_bfloat16(float f);
float from_bfloat16(uint16_t b);

}  // namespace gossipd::protocol
