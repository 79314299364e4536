#pragma once

#include <array>
#include <cstdint>

namespace gossipd::daemon {

// A round (step count) as two floats, each exact below 2^24, so collectives
// that move floats can carry it: low 24 bits, then the rest.
inline std::array<float, 2> round_to_floats(uint64_t round) {
  return {static_cast<float>(round & 0xffffff), static_cast<float>(round >> 24)};
}

inline uint64_t round_from_floats(const float* f) {
  return static_cast<uint64_t>(f[0]) | (static_cast<uint64_t>(f[1]) << 24);
}

}  // namespace gossipd::daemon
