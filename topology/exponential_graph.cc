#include "topology/exponential_graph.h"

#include <algorithm>
#include <bit>

namespace gossipd::topology {
namespace {

std::vector<size_t> hop_lengths(size_t n, uint64_t round, size_t peers) {
  const size_t levels = exponential_hops(n);
  std::vector<size_t> hops;
  if (levels == 0) return hops;
  const size_t k = std::min(std::max<size_t>(peers, 1), levels);
  for (size_t j = 0; j < k; ++j) hops.push_back(size_t{1} << ((round * k + j) % levels));
  return hops;
}

}  // namespace

size_t exponential_hops(size_t n) {
  if (n < 2) return 0;
  return static_cast<size_t>(std::bit_width(n - 1));  // ⌊log2(n−1)⌋ + 1
}

std::vector<size_t> exponential_out_peers(size_t n, size_t self, uint64_t round, size_t peers) {
  std::vector<size_t> out;
  for (size_t h : hop_lengths(n, round, peers)) out.push_back((self + h) % n);
  return out;
}

std::vector<size_t> exponential_in_peers(size_t n, size_t self, uint64_t round, size_t peers) {
  std::vector<size_t> in;
  for (size_t h : hop_lengths(n, round, peers)) in.push_back((self + n - h % n) % n);
  return in;
}

}  // namespace gossipd::topology
