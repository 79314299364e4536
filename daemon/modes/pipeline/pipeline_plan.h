#pragma once

#include <string>
#include <vector>

#include "daemon/modes/pipeline/pipeline_schedule.h"
#include "daemon/modes/pipeline/pipeline_timing.h"
#include "daemon/plan/link_model.h"
#include "trainer/layer_timing.h"
#include "trainer/optimizer.h"

namespace gossipd::daemon {

// What the pipeline planner prices a partition from: every layer's time on
// one micro-batch (trainer::time_layers on this machine), the link between
// stages, and the optimizer's time per parameter.
struct PipelinePlanInput {
  std::vector<trainer::LayerTiming> layers;
  size_t input_floats = 0;  // one sample of the model's input
  size_t micro_batch = 1;
  size_t micros = 1;  // M
  topology::PipelineSchedule schedule = topology::PipelineSchedule::kOneFOneB;
  LinkModel link;
  double update_s_per_param = 0;
  double stash_s_per_param = 0;  // 1f1b-async's weight stashing: a copy per update, but at the last stage
  size_t replicas = 1;           // D: each stage's gradients are summed over D replicas before its update
};

// A ring allreduce of `floats` over `replicas` processes on `link`:
// 2 (D - 1) messages of 1/D of the floats each, and the pass that takes
// the mean of this process's 1/D.
double allreduce_seconds(const LinkModel& link, size_t replicas, size_t floats, double pass_s_per_float);

struct StagePlan {
  size_t first = 0, last = 0;            // layers [first, last)
  double forward_s = 0, backward_s = 0;  // per micro-batch
  double refind_s = 0;                   // more per backward not right after its forward
  double weights_s = 0;                  // of backward_s, its W under zb (the layers that split)
  double refind_weights_s = 0;           // of refind_s, the split layers' (their W makes it again)
  size_t params = 0;
  size_t in_flight = 0;       // most micro-batches it holds under the schedule
  size_t stash_floats = 0;    // what one micro-batch stashes (trainer::Stage::stash_floats)
  double boundary_bytes = 0;  // its output per micro-batch, sent to the next stage (0 for the last)
  // Parameters, their gradients and the optimizer's velocity, the
  // activations of the micro-batches in flight, (1f1b-async) one stashed
  // copy of the weights per micro-batch in flight, and (zb, but the first
  // stage) the output gradients of two micro-batches between B and W.
  double memory_bytes = 0;
};

struct PipelinePlan {
  topology::LayerRanges ranges;
  std::vector<StagePlan> stages;
  double step_s = 0;  // one batch under the input's schedule
  double bubble = 0;  // the mean over stages of the fraction of the step a stage idles
};

// What a plan of `model` needs from this machine: every layer timed on one
// micro-batch (the median of `reps` passes) and the optimizer's step per
// parameter. The caller sets the schedule, M and the link.
PipelinePlanInput measure_pipeline(trainer::Model& model, const trainer::OptimizerOptions& optimizer,
                                   size_t micro_batch, int reps);

// One partition, priced: the stages' op lists run through
// topology::simulate_pipeline with transfers of latency + bytes / bandwidth
// each way. 1f1b-async is priced per batch in the steady state (eight
// batches' micro-batches without a drain, over eight).
PipelinePlan price_partition(const PipelinePlanInput& in, const topology::LayerRanges& ranges);

// The fastest contiguous partition into exactly `stages` stages (every one
// tried: C(L-1, K-1) of them).
PipelinePlan best_partition(const PipelinePlanInput& in, size_t stages);

// The plan for at most `stages` stages: the fastest partition of each
// stage count, merged down to the fewest stages predicted within 1% of the
// fastest (a boundary whose transfer costs more than the split saves, or a
// stage that saves next to nothing).
struct PipelineChoice {
  PipelinePlan plan;                   // the one to run
  std::vector<PipelinePlan> by_count;  // the fastest of 1 .. `stages` stages
  std::string why;                     // why it has fewer stages than asked, or empty
};
// Throws std::invalid_argument when `stages` is 0 or more than the layers.
PipelineChoice plan_pipeline(const PipelinePlanInput& in, size_t stages);

}  // namespace gossipd::daemon
