#include "protocol/wire/codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace gossipd::protocol {
namespace {

size_t blocks_of(size_t count, uint32_t block) { return (count + block - 1) / block; }

float at(std::span<const float> x, std::span<const float> carry, size_t i) {
  return carry.empty() ? x[i] : x[i] + carry[i];
}

void put_u16(std::byte* out, size_t i, uint16_t v) { std::memcpy(out + 2 * i, &v, 2); }

uint16_t get_u16(const std::byte* in, size_t i) {
  uint16_t v;
  std::memcpy(&v, in + 2 * i, 2);
  return v;
}

// Layout: every block's float32 scale, then every value as int8.
void encode_int8(uint32_t block, std::span<const float> x, std::span<const float> carry, std::byte* out) {
  const size_t n = x.size();
  const size_t blocks = blocks_of(n, block);
  std::byte* values = out + 4 * blocks;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t lo = b * block, hi = std::min(n, lo + block);
    float peak = 0.0f;
    for (size_t i = lo; i < hi; ++i) peak = std::max(peak, std::fabs(at(x, carry, i)));
    float scale = std::isfinite(peak) ? peak / 127.0f : 0.0f;  // a non-finite block travels as zeros
    std::memcpy(out + 4 * b, &scale, 4);
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    for (size_t i = lo; i < hi; ++i) {
      const float q = std::clamp(std::nearbyint(at(x, carry, i) * inv), -127.0f, 127.0f);
      values[i] = static_cast<std::byte>(static_cast<int8_t>(std::isfinite(q) ? q : 0.0f));
    }
  }
}

bool decode_int8(uint32_t block, const std::byte* in, std::span<float> out) {
  const size_t n = out.size();
  const size_t blocks = blocks_of(n, block);
  const std::byte* values = in + 4 * blocks;
  for (size_t b = 0; b < blocks; ++b) {
    float scale;
    std::memcpy(&scale, in + 4 * b, 4);
    if (!std::isfinite(scale) || scale < 0.0f) return false;
    const size_t lo = b * block, hi = std::min(n, lo + block);
    for (size_t i = lo; i < hi; ++i) out[i] = static_cast<float>(static_cast<int8_t>(values[i])) * scale;
  }
  return true;
}

}  // namespace

std::optional<Codec> parse_codec(std::string_view name) {
  for (Codec c : {Codec::kNone, Codec::kFp16, Codec::kBf16, Codec::kInt8}) {
    if (codec_name(c) == name) return c;
  }
  return std::nullopt;
}

std::string codec_name(Codec codec) {
  switch (codec) {
    case Codec::kFp16:
      return "fp16";
    case Codec::kBf16:
      return "bf16";
    case Codec::kInt8:
      return "int8";
    case Codec::kNone:
      break;
  }
  return "none";
}

std::string spec_name(const CodecSpec& spec) {
  return spec.codec == Codec::kInt8 ? "int8/" + std::to_string(spec.block) : codec_name(spec.codec);
}

std::string parse_spec(std::string_view text, CodecSpec* out) {
  const size_t slash = text.find('/');
  const auto codec = parse_codec(text.substr(0, slash));
  if (!codec) return "'" + std::string(text) + "' is not a codec: use none, fp16, bf16, int8 or int8/BLOCK";
  CodecSpec spec{*codec};
  if (slash != std::string_view::npos) {
    const std::string digits(text.substr(slash + 1));
    if (*codec != Codec::kInt8) return "'" + std::string(text) + "': only int8 has a block size";
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      return "'" + std::string(text) + "': the block is a number of values";
    if (auto problem = int8_block_problem(std::stoull(digits)); !problem.empty()) return problem;
    spec.block = static_cast<uint32_t>(std::stoul(digits));
  }
  *out = spec;
  return "";
}

std::string int8_block_problem(uint64_t block) {
  if (block >= kMinInt8Block && block <= kMaxInt8Block) return "";
  return "int8 block of " + std::to_string(block) + " values does not fit: a block holds " +
         std::to_string(kMinInt8Block) + " to " + std::to_string(kMaxInt8Block) +
         " values (one float32 scale each)";
}

proto::DType codec_dtype(Codec codec) {
  switch (codec) {
    case Codec::kFp16:
      return proto::DTYPE_FLOAT16;
    case Codec::kBf16:
      return proto::DTYPE_BFLOAT16;
    case Codec::kInt8:
      return proto::DTYPE_INT8_BLOCKS;
    case Codec::kNone:
      break;
  }
  return proto::DTYPE_FLOAT32;
}

std::optional<CodecSpec> spec_of(proto::DType dtype, uint32_t block) {
  switch (dtype) {
    case proto::DTYPE_FLOAT32:
      return CodecSpec{};
    case proto::DTYPE_FLOAT16:
      return CodecSpec{Codec::kFp16};
    case proto::DTYPE_BFLOAT16:
      return CodecSpec{Codec::kBf16};
    case proto::DTYPE_INT8_BLOCKS:
      if (!int8_block_problem(block).empty()) return std::nullopt;
      return CodecSpec{Codec::kInt8, block};
    default:
      return std::nullopt;
  }
}

std::optional<CodecSpec> declared_spec(const proto::Envelope& env) {
  return spec_of(env.dtype(), env.codec_block());
}

size_t encoded_bytes(const CodecSpec& spec, size_t count) {
  switch (spec.codec) {
    case Codec::kFp16:
    case Codec::kBf16:
      return 2 * count;
    case Codec::kInt8:
      return count + 4 * blocks_of(count, spec.block);
    case Codec::kNone:
      break;
  }
  return 4 * count;
}

std::optional<size_t> decoded_count(const CodecSpec& spec, size_t bytes) {
  size_t count = 0;
  switch (spec.codec) {
    case Codec::kNone:
      count = bytes / 4;
      break;
    case Codec::kFp16:
    case Codec::kBf16:
      count = bytes / 2;
      break;
    case Codec::kInt8: {  // whole blocks of block + 4 bytes, then a shorter one
      const size_t whole = bytes / (spec.block + 4), rest = bytes % (spec.block + 4);
      count = whole * spec.block + (rest > 4 ? rest - 4 : 0);
      break;
    }
  }
  if (encoded_bytes(spec, count) != bytes) return std::nullopt;
  return count;
}

std::vector<std::byte> encode(const CodecSpec& spec, std::span<const float> x, std::span<const float> carry) {
  if (spec.codec == Codec::kNone && carry.empty()) {
    // The floats as they are: one copy (a sized vector would be zeroed
    // first, a pass as long as the copy on every float32 push).
    const std::span<const std::byte> bytes = std::as_bytes(x);
    return std::vector<std::byte>(bytes.begin(), bytes.end());
  }
  std::vector<std::byte> out(encoded_bytes(spec, x.size()));
  switch (spec.codec) {
    case Codec::kNone:
      for (size_t i = 0; i < x.size(); ++i) {
        const float v = at(x, carry, i);
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
      break;
    case Codec::kFp16:
      for (size_t i = 0; i < x.size(); ++i) put_u16(out.data(), i, to_half(at(x, carry, i)));
      break;
    case Codec::kBf16:
      for (size_t i = 0; i < x.size(); ++i) put_u16(out.data(), i, to_bfloat16(at(x, carry, i)));
      break;
    case Codec::kInt8:
      encode_int8(spec.block, x, carry, out.data());
      break;
  }
  return out;
}

bool decode(const CodecSpec& spec, std::span<const std::byte> in, std::span<float> out) {
  if (in.size() != encoded_bytes(spec, out.size())) return false;
  switch (spec.codec) {
    case Codec::kNone:
      if (!out.empty()) std::memcpy(out.data(), in.data(), in.size());
      return true;
    case Codec::kFp16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = from_half(get_u16(in.data(), i));
      return true;
    case Codec::kBf16:
      for (size_t i = 0; i < out.size(); ++i) out[i] = from_bfloat16(get_u16(in.data(), i));
      return true;
    case Codec::kInt8:
      return decode_int8(spec.block, in.data(), out);
  }
  return false;
}

uint16_t to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00u;   // NaN stays NaN (quiet)
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // rounds to 65520 or more: infinity
  if (ax < 0x38800000u) {                        // below half's smallest normal, 2^-14
    // In units of half's smallest subnormal (2^-24); exact, then rounded to nearest even.
    const float units = std::nearbyint(std::bit_cast<float>(ax) * 16777216.0f);
    return sign | static_cast<uint16_t>(units);  // 1024 is the smallest normal's encoding
  }
  ax += 0x0fffu + ((ax >> 13) & 1u);  // round the 13 dropped bits to nearest even
  return sign | static_cast<uint16_t>((ax - (112u << 23)) >> 13);
}

float from_half(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    const float v = static_cast<float>(m) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float from_bfloat16(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// Built for AVX2 and for the baseline, picked at load time (a pass over
// every float received).
__attribute__((target_clones("avx2", "default"))) bool all_finite(std::span<const std::byte> values) {
  // Exponent bits all set: an infinity or a NaN. Or-ed over the whole span
  // with no early exit, so that the loop vectorizes.
  constexpr uint32_t kExponent = 0x7f800000u;
  uint32_t bad = 0;
  for (size_t at = 0; at + sizeof(uint32_t) <= values.size(); at += sizeof(uint32_t)) {
    uint32_t bits;
    std::memcpy(&bits, values.data() + at, sizeof bits);
    bad |= static_cast<uint32_t>((bits & kExponent) == kExponent);
  }
  return bad == 0;
}

}  // namespace gossipd::protocol
