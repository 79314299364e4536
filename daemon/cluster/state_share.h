#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// One share of a replica's state, as a joiner asks it of one donor: the
// parameters [param_begin, param_end) and the optimizer state
// [optimizer_begin, optimizer_end). Shares of one state are disjoint and
// cover it; parameter ranges start and end on segment boundaries, so that
// SGP's push-sum weight of a segment comes whole from the one donor that
// sends it (and splits its mass with the joiner).
struct ShareSpan {
  size_t param_begin = 0;
  size_t param_end = 0;
  size_t optimizer_begin = 0;
  size_t optimizer_end = 0;

  size_t floats() const { return (param_end - param_begin) + (optimizer_end - optimizer_begin); }
  bool holds_param(size_t i) const { return i >= param_begin && i < param_end; }
};

// The whole state: what a joiner that asks for no share is sent.
inline ShareSpan whole_state(size_t params, size_t optimizer) { return {0, params, 0, optimizer}; }

// The segment lengths shares are cut on for a joiner that says `hello`: its
// segments when it says shares_on_segments (SGP's and OSGP's: a segment's
// push-sum weight must come whole from the one donor that splits its mass),
// none otherwise (shares cut evenly, as many as asked).
std::vector<uint64_t> share_cut_lengths(const proto::Hello& hello);

// A share smaller than this is not worth a donor of its own.
constexpr size_t kMinShareFloats = 32 << 10;

// How many shares a joiner asks for: at most `donors` (members it may ask)
// and `wanted` (--join-donors), at most one per segment, none smaller than
// kMinShareFloats; at least 1.
uint32_t share_count(std::span<const uint64_t> segment_lengths, size_t params, size_t optimizer,
                     size_t donors, size_t wanted);

// Share `index` of `of`: parameters cut on the segment boundary nearest each
// 1/of of them (whole when the lengths do not tile the parameters, then cut
// evenly), the optimizer state cut evenly. Pure: the joiner and every donor
// compute the same span. `index` < `of` (the caller checks).
ShareSpan share_span(std::span<const uint64_t> segment_lengths, size_t params, size_t optimizer,
                     uint32_t index, uint32_t of);

// CRC-32 of the span's parameter bytes then its optimizer bytes.
uint32_t share_crc(const std::vector<float>& params, const std::vector<float>& optimizer,
                   const ShareSpan& span);

}  // namespace gossipd::daemon
