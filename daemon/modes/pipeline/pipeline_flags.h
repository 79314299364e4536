#pragma once

#include <string>

#include "daemon/config/run_options.h"
#include "daemon/modes/pipeline/pipeline_search.h"
#include "daemon/worker/replica.h"
#include "trainer/model.h"

namespace gossipd::daemon {

// gossipd run's flags of --algo pipeline (daemon/modes/pipeline/pipeline_mode.cc):
// each a value or auto, the planner's choice (pipeline_search.h). --batch
// is the global batch: D replicas take batch / D each.
struct PipelineFlags {
  std::string stages = "auto";         // K
  std::string replicas = "auto";       // D
  std::string micro_batches = "auto";  // M per replica's batch (0 is auto too)
  std::string schedule = "auto";       // gpipe | 1f1b | 1f1b-async
  std::string partition = "auto";      // L,L,... (layers per stage) | a plan's JSON file
};

// What the flags fix, the rest left to the planner. Throws UsageError naming a value that does
// not read or a partition without its --stages.
PlanLimits pipeline_limits(const PipelineFlags& flags, size_t layers);

// The flags' values fit the cluster and the model: K x D = the members, M
// divides the batch, K no more than the model's layers, a partition covers
// it in K stages, and some plan meets them all (throws UsageError naming
// what does not fit).
void check_pipeline(const RunOptions& options, const PipelineFlags& flags, size_t members,
                    const trainer::Model& model);

// What a stage's checkpoint holds: its layers' parameters and optimizer
// state. Under auto, the shape and partition of the newest checkpoint in
// --checkpoint-dir (a restart keeps the plan it was written with).
StateLayout pipeline_state_layout(const RunOptions& options, const PipelineFlags& flags,
                                  const Placement& where, const trainer::Model& model);

// The newest checkpoint's plan in --checkpoint-dir (its shape and
// partition fixed), or the limits as they are when there is none.
PlanLimits resumed_limits(const RunOptions& options, PlanLimits limits, size_t layers);

}  // namespace gossipd::daemon
