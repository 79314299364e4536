#pragma once

#include <cstddef>
#include <vector>

namespace gossipd::protocol {

class Node;

// One contiguous run of the parameter buffer that gossip exchanges as a unit
// (a layer block by default). Offsets and lengths are in floats.
struct SegmentRange {
  size_t offset = 0;
  size_t length = 0;
};
using SegmentTable = std::vector<SegmentRange>;

// Throws ProtocolConfigError unless the segments tile [0, total) in order.
void check_segment_table(const SegmentTable& table, size_t total);

// Tells the node's validator the segment lengths, so inbound SEGMENT
// messages are checked against them (and accepted at all).
void register_segments(Node& node, const SegmentTable& table);

}  // namespace gossipd::protocol
