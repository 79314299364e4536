#include "topology/derangement.h"

#include <numeric>
#include <utility>

#include "topology/draw.h"

namespace gossipd::topology {

std::vector<uint32_t> derangement(size_t n, uint64_t seed, uint32_t view_id, uint64_t round,
                                  uint32_t segment) {
  if (n < 2) return {};
  Draw draw{seed, view_id, round, segment};
  std::vector<uint32_t> p(n);
  for (;;) {
    std::iota(p.begin(), p.end(), 0u);
    for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[draw.below(i)]);
    bool fixed_point = false;
    for (size_t i = 0; i < n && !fixed_point; ++i) fixed_point = p[i] == i;
    if (!fixed_point) return p;
  }
}

std::optional<Exchange> crossover_exchange(const View& view, size_t self, uint64_t seed, uint64_t round,
                                           uint32_t segment) {
  if (view.size() < 2 || self >= view.size()) return std::nullopt;
  const auto p = derangement(view.size(), seed, view.id(), round, segment);
  Exchange e;
  e.send_to = p[self];
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == self) e.receive_from = i;
  }
  return e;
}

}  // namespace gossipd::topology
