#pragma once

#include <cstdint>
#include <initializer_list>

namespace gossipd::topology {

// A counter-based generator keyed by a tuple such as (seed, view id, round,
// segment): the k-th draw depends only on the key and k, so every member
// that knows the tuple computes the same numbers with no message and no
// shared state. The mixing is SplitMix64's finaliser; the stream is fixed by
// this code, not by a standard library's distributions.
class Draw {
 public:
  Draw(std::initializer_list<uint64_t> key);

  uint64_t next();
  // Uniform in [0, bound), bound > 0, without modulo bias.
  uint64_t below(uint64_t bound);

 private:
  uint64_t key_ = 0;
  uint64_t counter_ = 0;
};

}  // namespace gossipd::topology
