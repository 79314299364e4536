#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <utility>

namespace gossipd::trainer {

// Small seeded generator whose streams are fixed by this code alone (the
// standard library's distributions differ between implementations), so the
// same seed gives the same model and data order everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  // Derives an independent stream, e.g. for (seed, worker, epoch).
  static Rng derive(uint64_t seed, uint64_t a, uint64_t b = 0) {
    Rng r(seed);
    r.state_ ^= mix(a + 0x9e3779b97f4a7c15ULL);
    r.state_ = mix(r.state_ ^ mix(b + 0x632be59bd9b4e019ULL));
    return r;
  }

  uint64_t next() {  // SplitMix64
    state_ += 0x9e3779b97f4a7c15ULL;
    return mix(state_);
  }

  // Uniform in [0, bound) without modulo bias (Lemire's method).
  uint64_t below(uint64_t bound) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * bound;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < bound) {
      uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * bound;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  double normal() {  // Box-Muller
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

  template <typename T>
  void shuffle(std::span<T> items) {
    for (size_t i = items.size(); i > 1; --i) {
      std::swap(items[i - 1], items[below(i)]);
    }
  }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  uint64_t state_;
};

}  // namespace gossipd::trainer
