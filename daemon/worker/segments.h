#pragma once

#include <string>
#include <vector>

#include "protocol/collectives/segment_inbox.h"
#include "trainer/model.h"

namespace gossipd::daemon {

// `--segments`: "fine" (one per layer block, the trainer's table), "coarse"
// (the whole model as one segment) or a number N (N nearly equal contiguous
// pieces). Throws UsageError for anything else or N larger than the model.
protocol::SegmentTable make_segment_table(const std::vector<trainer::ParamSegment>& model_segments,
                                          size_t total, const std::string& spec);

}  // namespace gossipd::daemon
