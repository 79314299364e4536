#include "protocol/robust/verdicts.h"

#include <cmath>

namespace gossipd::protocol {

void Verdicts::encode(std::span<const uint8_t> far, std::span<float> out) {
  for (size_t w = 0; w < out.size(); ++w) {
    uint32_t word = 0;
    for (size_t b = 0; b < kBitsPerWord && w * kBitsPerWord + b < far.size(); ++b)
      word |= uint32_t{far[w * kBitsPerWord + b] != 0} << b;
    out[w] = static_cast<float>(word);
  }
}

std::optional<std::vector<uint8_t>> Verdicts::decode(std::span<const float> in, size_t members) {
  if (in.size() != words(members)) return std::nullopt;
  std::vector<uint8_t> far(members, 0);
  for (size_t w = 0; w < in.size(); ++w) {
    const float f = in[w];
    if (!(f >= 0.0f && f < 65536.0f) || std::floor(f) != f) return std::nullopt;
    const auto word = static_cast<uint32_t>(f);
    for (size_t b = 0; b < kBitsPerWord; ++b) {
      if (!(word >> b & 1u)) continue;
      const size_t member = w * kBitsPerWord + b;
      if (member >= members) return std::nullopt;
      far[member] = 1;
    }
  }
  return far;
}

}  // namespace gossipd::protocol
