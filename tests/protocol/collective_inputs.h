#pragma once

#include <vector>

namespace gossipd::protocol::testing {

// Integer-valued, so every summation order gives the same float; `call`
// varies them from one collective call to the next.
inline float input(size_t rank, size_t i, size_t call = 0) {
  return static_cast<float>((i * 7 + rank * 13 + call * 3) % 101);
}

inline std::vector<float> rank_input(size_t rank, size_t count, size_t call = 0) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = input(rank, i, call);
  return v;
}

// The sum over ranks 0 .. ranks-1.
inline std::vector<float> serial_sum(size_t ranks, size_t count, size_t call = 0) {
  std::vector<float> s(count, 0.0f);
  for (size_t r = 0; r < ranks; ++r) {
    for (size_t i = 0; i < count; ++i) s[i] += input(r, i, call);
  }
  return s;
}

}  // namespace gossipd::protocol::testing
