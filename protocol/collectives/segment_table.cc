#include "protocol/collectives/segment_table.h"

#include "protocol/transport/node.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {

void check_segment_table(const SegmentTable& table, size_t total) {
  size_t next = 0;
  for (size_t i = 0; i < table.size(); ++i) {
    if (table[i].offset != next || table[i].length == 0) {
      throw ProtocolConfigError("segment " + std::to_string(i) + " does not follow the previous one");
    }
    next += table[i].length;
  }
  if (next != total) {
    throw ProtocolConfigError("segments cover " + std::to_string(next) + " of " + std::to_string(total) +
                              " floats");
  }
}

void register_segments(Node& node, const SegmentTable& table) {
  std::vector<uint64_t> lengths;
  for (const auto& s : table) lengths.push_back(s.length);
  node.validator().set_segment_lengths(std::move(lengths));
}

}  // namespace gossipd::protocol
