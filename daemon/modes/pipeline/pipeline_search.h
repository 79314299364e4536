#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "daemon/modes/pipeline/pipeline_plan.h"
#include "daemon/modes/pipeline/pipeline_schedule.h"
#include "daemon/plan/layer_profile.h"
#include "daemon/plan/link_model.h"

namespace gossipd::daemon {

// The whole plan of --algo pipeline on P processes: K stages x D replicas
// (K = 1 is data parallel, D = 1 one pipeline), M micro-batches of each
// replica's share of the global batch, a schedule and a partition.
struct WholePlan {
  size_t stages = 1, replicas = 1, micros = 1;
  topology::PipelineSchedule schedule = topology::PipelineSchedule::kOneFOneB;
  PipelinePlan pipeline;   // the partition, its stages and bubble, priced at batch / (D * M)
  double allreduce_s = 0;  // the slowest stage's gradient allreduce over the replicas, per update
  double step_s = 0;       // one global batch, everything included
  size_t batch = 0;        // the global batch
  size_t micro_batch = 0;  // batch / (D * M)
};

// What the user fixed; the rest is searched. A partition fixes the stages.
struct PlanLimits {
  std::optional<size_t> stages, replicas, micros;
  std::optional<topology::PipelineSchedule> schedule;
  std::optional<topology::LayerRanges> partition;
};

// The micro-batch sizes a search over `batch` on `procs` processes and a
// model of `layers` prices: what to profile (empty: no plan fits).
std::vector<size_t> plan_micro_batches(size_t batch, size_t procs, size_t layers, const PlanLimits& limits);

// Every plan for `procs` processes and a global `batch`, priced from
// `profile` (each plan at its micro-batch size) and `link` (the stage
// boundaries' transfers, the replicas' ring allreduce), fastest first.
// Considered: every K x D = procs (K no more than the layers, D dividing
// the batch), every M dividing batch / D up to kMostMicros, gpipe and
// 1f1b (K = 1: 1f1b only, the schedules are one there), which take the
// serial run's step. 1f1b-async only when the limits name it (its updates
// come from gradients of older weights: another optimization, which
// diverged where the synchronous one trains), at M = 1 unless M is fixed
// (an update per micro-batch keeps the global batch only then). The partition of each: the fastest of every
// cut (best_partition), or the most balanced when there are too many cuts
// to price. Throws std::invalid_argument naming a limit nothing meets.
std::vector<WholePlan> rank_pipeline_plans(const LayerProfile& profile, size_t batch, size_t procs,
                                           const LinkModel& link, const PlanLimits& limits);

constexpr size_t kMostMicros = 64;

// "2x1 1f1b-async M=1 partition 7,8": the plan in one line.
std::string plan_name(const WholePlan& p);

}  // namespace gossipd::daemon
