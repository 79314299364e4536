#pragma once

#include <cstddef>

namespace gossipd::protocol {

// Σ term(i) in eight partial sums: the loop vectorizes, where one running
// sum is an ordered reduction (and took as long as the rest of an SGP
// round's mixing). The terms may come in ranges, each starting at a
// multiple of 8 and each but the last of a multiple of 8 terms: the total
// is then the same, bit for bit, as one add() over all of them (what lets
// CenteredClip measure distances chunk by chunk, in the pass that has the
// chunk in cache).
class Sum8 {
 public:
  // Always inlined: into a kernel built for AVX2, the loop is AVX2 too.
  template <class Term>
  [[gnu::always_inline]] void add(size_t begin, size_t end, Term term) {
    const size_t whole = begin + (end - begin) / 8 * 8;
    for (size_t i = begin; i < whole; i += 8) {
      for (size_t k = 0; k < 8; ++k) part_[k] += term(i + k);
    }
    for (size_t i = whole; i < end; ++i) tail_ += term(i);
  }
  double total() const {
    double s = tail_;
    for (double p : part_) s += p;
    return s;
  }

 private:
  double part_[8] = {};
  double tail_ = 0;
};

template <class Term>
[[gnu::always_inline]] inline double sum8(size_t n, Term term) {
  Sum8 s;
  s.add(0, n, term);
  return s.total();
}

}  // namespace gossipd::protocol
