#pragma once

#include <optional>
#include <string>

#include "daemon/config/run_options.h"
#include "daemon/modes/pipeline/pipeline_schedule.h"

namespace gossipd::daemon {

// The pipeline's partition as text, wherever a user or a file gives it:
// --partition (counts or a plan's JSON) and the layout a stage's
// checkpoints carry. Every reader throws UsageError naming what is wrong
// (fuzzed: tests/fuzz/fuzz_partition_text.cc).

// "pipeline 2x1 stage 0 (replica 0), partition 3,7": the layout its
// checkpoints carry (another shape's or partition's is refused by name).
std::string stage_name(topology::PipelineShape shape, topology::PipelineCoord at,
                       const topology::LayerRanges& r);

// The shape in a layout stage_name wrote ("pipeline 2x1 ...").
topology::PipelineShape shape_of(const std::string& layout);

// The partition in a layout stage_name wrote, of a model of `layers`.
topology::LayerRanges partition_of(const std::string& layout, size_t layers);

// "partition":"3,7" in the text of a plan's JSON (gossipctl plan pipeline
// --json) read from `path`.
std::string partition_in_plan_text(const std::string& json, const std::string& path);

// --partition given as counts or a plan's JSON: the layer ranges, or
// nullopt for auto.
std::optional<topology::LayerRanges> given_partition(const std::string& partition, size_t layers);

}  // namespace gossipd::daemon
