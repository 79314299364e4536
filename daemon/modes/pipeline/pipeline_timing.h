#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "daemon/modes/pipeline/pipeline_schedule.h"

namespace gossipd::topology {

// What one micro-batch costs at each stage, in seconds: its forward and
// backward compute, and the transfers between stage k and k + 1 (the
// activation forward, its gradient back), which overlap compute.
struct StageTimes {
  std::vector<double> forward;   // per stage
  std::vector<double> backward;  // per stage
  std::vector<double> to_next;   // per boundary k -> k+1 (K - 1 of them)
  std::vector<double> to_prev;   // per boundary k+1 -> k
  std::vector<double> update;    // per stage: one optimizer step
  // Per stage (empty: none): what a backward costs more when the stage's
  // previous op was not its micro-batch's forward, so its layers make the
  // state that forward left again (an im2col, a max-pool's maxima).
  std::vector<double> refind;
  // Per stage (empty: none): the part of `backward` a split backward runs
  // later, as its W (zb); its B takes the rest.
  std::vector<double> weights;
  // Per stage (empty: none): the part of `refind` that is a split layer's
  // own state (a convolution's im2col), which its W makes again, not its B.
  std::vector<double> refind_weights;
};

struct PipelineTiming {
  double step = 0;             // from the first forward's start to the last stage's finish
  std::vector<double> busy;    // per stage: seconds computing
  std::vector<double> bubble;  // per stage: 1 - busy / step
};

// Runs every stage's ops in order, as the workers do: an op starts when its
// stage is free and its input has arrived (a forward needs the previous
// stage's forward of the micro-batch, a backward the next stage's backward).
// A synchronous schedule ends with one update per stage; 1f1b-async updates
// after every backward. std::nullopt when the ops can never finish (a
// schedule that deadlocks), which the schedules in pipeline.h never do.
std::optional<PipelineTiming> simulate_pipeline(PipelineSchedule schedule, size_t micros,
                                                const StageTimes& t);

}  // namespace gossipd::topology
