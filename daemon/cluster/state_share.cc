#include "daemon/cluster/state_share.h"

#include <zlib.h>

#include <algorithm>
#include <numeric>

#include "protocol/wire/validator.h"

namespace gossipd::daemon {
namespace {

// The segment boundaries, when the lengths tile [0, params): 0, l0, l0+l1, ..., params.
std::vector<size_t> boundaries(std::span<const uint64_t> lengths, size_t params) {
  std::vector<size_t> b{0};
  for (uint64_t l : lengths) {
    if (l == 0 || l > params - b.back()) return {};
    b.push_back(b.back() + static_cast<size_t>(l));
  }
  if (b.back() != params) return {};
  return b;
}

size_t even_cut(size_t n, uint32_t i, uint32_t of) {
  return static_cast<size_t>((static_cast<unsigned __int128>(n) * i) / of);
}

void crc_range(uLong& crc, const float* p, size_t floats) {
  const auto* bytes = reinterpret_cast<const Bytef*>(p);
  size_t left = floats * sizeof(float);
  while (left > 0) {  // crc32 takes a uInt length
    const auto n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
    crc = crc32(crc, bytes, n);
    bytes += n;
    left -= n;
  }
}

}  // namespace

std::vector<uint64_t> share_cut_lengths(const proto::Hello& hello) {
  if (!hello.shares_on_segments()) return {};
  return {hello.segment_lengths().begin(), hello.segment_lengths().end()};
}

uint32_t share_count(std::span<const uint64_t> segment_lengths, size_t params, size_t optimizer,
                     size_t donors, size_t wanted) {
  size_t k = std::min(donors, wanted);
  k = std::min(k, (params + optimizer) / kMinShareFloats);
  const std::vector<size_t> b = boundaries(segment_lengths, params);
  if (!b.empty()) k = std::min(k, b.size() - 1);
  return static_cast<uint32_t>(std::clamp<size_t>(k, 1, protocol::kMaxStateShares));
}

ShareSpan share_span(std::span<const uint64_t> segment_lengths, size_t params, size_t optimizer,
                     uint32_t index, uint32_t of) {
  ShareSpan s;
  s.optimizer_begin = even_cut(optimizer, index, of);
  s.optimizer_end = even_cut(optimizer, index + 1, of);
  const std::vector<size_t> b = boundaries(segment_lengths, params);
  if (b.size() < static_cast<size_t>(of) + 1) {  // no tiling segments, or fewer than shares: cut evenly
    s.param_begin = even_cut(params, index, of);
    s.param_end = even_cut(params, index + 1, of);
    return s;
  }
  // Cut i is the i-th boundary nearest i/of of the parameters, strictly
  // after cut i-1 and leaving a boundary for each later cut: no share empty.
  auto cut = [&](uint32_t i) {
    size_t at = 0;
    for (uint32_t c = 1; c <= i; ++c) {
      const size_t target = even_cut(params, c, of);
      const size_t lo = at + 1, hi = b.size() - 1 - (of - c);
      auto off = [&](size_t j) { return b[j] > target ? b[j] - target : target - b[j]; };
      size_t best = lo;
      for (size_t j = lo; j <= hi; ++j) {
        if (off(j) < off(best)) best = j;
      }
      at = best;
    }
    return at;
  };
  s.param_begin = b[index == 0 ? 0 : cut(index)];
  s.param_end = b[index + 1 == of ? b.size() - 1 : cut(index + 1)];
  return s;
}

uint32_t share_crc(const std::vector<float>& params, const std::vector<float>& optimizer,
                   const ShareSpan& span) {
  uLong crc = crc32(0L, Z_NULL, 0);
  crc_range(crc, params.data() + span.param_begin, span.param_end - span.param_begin);
  crc_range(crc, optimizer.data() + span.optimizer_begin, span.optimizer_end - span.optimizer_begin);
  return static_cast<uint32_t>(crc);
}

}  // namespace gossipd::daemon
