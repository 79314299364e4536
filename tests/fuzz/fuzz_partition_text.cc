// The texts that say how a replica is spread over processes: --partition
// "L,L,..." and a plan's JSON (pipeline), the layout in a stage's
// checkpoint (its partition and shape), --grid "PRxPC", and the pipeline
// planner's cached layer profile. Any bytes are read whole (a partition covers
// every layer in order, a shape has a row and a column at least) or refused
// with the one error type each reader promises, never crash.
#include <cassert>
#include <stdexcept>
#include <string>

#include "daemon/config/cli.h"
#include "daemon/modes/grid/grid_shape.h"
#include "daemon/modes/pipeline/pipeline_partition.h"
#include "daemon/modes/pipeline/pipeline_schedule.h"
#include "daemon/plan/layer_profile.h"

using namespace gossipd;

namespace {

void check_covers(const topology::LayerRanges& r, size_t layers) {
  assert(r.stages() >= 1 && r.begin(0) == 0 && r.end(r.stages() - 1) == layers);
  for (size_t k = 0; k < r.stages(); ++k) assert(r.begin(k) < r.end(k));
  (void)r;
  (void)layers;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (size_t layers : {1, 3, 10}) {
    try {
      check_covers(topology::parse_layer_counts(text, layers), layers);
    } catch (const std::invalid_argument&) {
    }
  }
  try {
    check_covers(daemon::partition_of(text, 10), 10);
  } catch (const daemon::UsageError&) {
  }
  try {
    const std::string counts = daemon::partition_in_plan_text(text, "plan.json");
    assert(counts.find('"') == std::string::npos);
  } catch (const daemon::UsageError&) {
  }
  try {
    const topology::PipelineShape s = daemon::shape_of(text);
    assert(s.stages >= 1 && s.replicas >= 1);
  } catch (const daemon::UsageError&) {
  }
  try {
    const daemon::LayerProfile p = daemon::parse_profile(text, "profile.txt");
    assert(!p.sizes.empty() && p.at.size() == p.sizes.size());
    for (const auto& layers : p.at) assert(layers.size() == p.at.front().size());
    (void)p.timings(p.sizes.back() + 1);
  } catch (const std::invalid_argument&) {
  }
  try {
    const topology::GridShape s = topology::parse_grid_shape(text);
    assert(s.rows >= 1 && s.cols >= 1);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
