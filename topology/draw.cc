#include "topology/draw.h"

namespace gossipd::topology {
namespace {

uint64_t finalise(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Draw::Draw(std::initializer_list<uint64_t> key) {
  for (uint64_t k : key) key_ = finalise(key_ ^ (k + 0x9e3779b97f4a7c15ULL));
}

uint64_t Draw::next() { return finalise(key_ + 0x9e3779b97f4a7c15ULL * ++counter_); }

uint64_t Draw::below(uint64_t bound) {
  // Rejection keeps the result exactly uniform.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t x = next();
  while (x >= limit) x = next();
  return x % bound;
}

}  // namespace gossipd::topology
