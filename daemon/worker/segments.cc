#include "daemon/worker/segments.h"

#include "daemon/config/cli.h"
#include "protocol/collectives/group.h"

namespace gossipd::daemon {

protocol::SegmentTable make_segment_table(const std::vector<trainer::ParamSegment>& model_segments,
                                          size_t total, const std::string& spec) {
  protocol::SegmentTable table;
  if (spec == "fine") {
    for (const auto& s : model_segments) table.push_back({s.offset, s.length});
    return table;
  }
  if (spec == "coarse") return {{0, total}};
  size_t pieces = 0;
  try {
    size_t used = 0;
    pieces = std::stoul(spec, &used);
    if (used != spec.size()) pieces = 0;
  } catch (const std::exception&) {
    pieces = 0;
  }
  if (pieces == 0 || pieces > total) {
    throw UsageError("--segments '" + spec + "' is not fine, coarse or a number from 1 to " +
                     std::to_string(total));
  }
  for (size_t i = 0; i < pieces; ++i) {
    const auto r = protocol::block_range(total, pieces, i);
    table.push_back({r.begin, r.size()});
  }
  return table;
}

}  // namespace gossipd::daemon
