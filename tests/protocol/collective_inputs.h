#pragma once

#include <chrono>
#include <vector>

#include "protocol/collectives/group.h"

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

// A 20 s timeout and 4 KiB pieces: several pieces per step from 1000 floats.
inline CollectiveOptions small_pieces() {
  CollectiveOptions o;
  o.timeout = std::chrono::seconds(20);
  o.chunk_bytes = 4 << 10;
  return o;
}

inline NodeOptions on_path(DataPath p) {
  NodeOptions n;
  n.data_path = p;
  return n;
}

}  // namespace gossipd::protocol::testing
