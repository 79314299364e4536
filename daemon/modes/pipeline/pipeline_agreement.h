#pragma once

#include <string>

#include "daemon/modes/pipeline/pipeline_schedule.h"
#include "daemon/modes/pipeline/pipeline_search.h"
#include "protocol/collectives/group.h"
#include "trainer/model.h"
#include "trainer/optimizer.h"

namespace gossipd::daemon {

// The plan every process of a pipeline run takes.
struct PipelineSetup {
  topology::PipelineShape shape;
  size_t micros = 1;
  topology::PipelineSchedule schedule = topology::PipelineSchedule::kOneFOneB;
  topology::LayerRanges ranges;
  double predicted_step_s = 0;
  std::string how;  // "given", or how the planner chose it (rank 0's words)
};

// What rank 0 plans for what `limits` leave open, and every member takes:
// timings differ from process to process, so one process decides. Rank
// 0 prices every plan of `members` processes for the global `batch`
// (pipeline_search.h) from its layer profile (cached per model and
// machine, profiled at the micro-batch sizes it lacks) on `link`, and
// takes the fastest. The profile is cached in `cache_dir`. A plan rank 0
// cannot make fails every process (DaemonError: rank 0's names why).
struct PlanRequest {
  size_t batch = 0;  // the global batch
  size_t members = 0;
  PlanLimits limits;
  LinkModel link;
  std::string cache_dir;
};
PipelineSetup agree_on_plan(protocol::Group& all, size_t rank, trainer::Model& model,
                            const trainer::OptimizerOptions& optimizer, const PlanRequest& request);

}  // namespace gossipd::daemon
