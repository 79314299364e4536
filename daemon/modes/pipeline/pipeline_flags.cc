#include "daemon/modes/pipeline/pipeline_flags.h"

#include <filesystem>

#include "daemon/cluster/checkpoint.h"
#include "daemon/config/cli.h"
#include "daemon/modes/pipeline/pipeline_partition.h"
#include "daemon/worker/mode.h"

namespace gossipd::daemon {
namespace {

// "auto" (or 0, for --micro-batches) or a count of at least 1.
std::optional<size_t> count_or_auto(const std::string& flag, const std::string& text, bool zero_is_auto) {
  if (text == "auto" || (zero_is_auto && text == "0")) return std::nullopt;
  const std::optional<size_t> n = entry_count(text);
  if (!n) throw UsageError(flag + " " + text + ": give a count of at least 1, or auto");
  return n;
}

std::string text(size_t n) { return std::to_string(n); }

// The plan of the newest checkpoint in `dir` that reads, or nullopt.
std::optional<std::string> newest_layout(const std::string& dir) {
  for (const auto& file : dir.empty() ? std::vector<std::filesystem::path>{} : list_checkpoints(dir)) {
    try {
      return read_checkpoint(file).state.header.layout();
    } catch (const CheckpointError&) {
    }
  }
  return std::nullopt;
}

}  // namespace

PlanLimits pipeline_limits(const PipelineFlags& f, size_t layers) {
  PlanLimits l;
  l.stages = count_or_auto("--stages", f.stages, false);
  l.replicas = count_or_auto("--replicas", f.replicas, false);
  l.micros = count_or_auto("--micro-batches", f.micro_batches, true);
  if (f.schedule != "auto") l.schedule = topology::parse_schedule(f.schedule);
  l.partition = given_partition(f.partition, layers);
  if (l.partition && !l.stages)
    throw UsageError("--partition " + f.partition + " fixes " + text(l.partition->stages()) +
                     " stages: give --stages " + text(l.partition->stages()) +
                     " with it (under --stages auto the planner chooses the partition)");
  return l;
}

void check_pipeline(const RunOptions& o, const PipelineFlags& f, size_t members,
                    const trainer::Model& model) {
  const size_t layers = model.layers().size();
  PlanLimits l = pipeline_limits(f, layers);
  const size_t batch = o.train.batch;
  if (l.stages && *l.stages > layers)
    throw UsageError("--stages " + text(*l.stages) + " is more than the model's " + text(layers) + " layers");
  if (l.stages && l.replicas && *l.stages * *l.replicas != members)
    throw UsageError("--stages " + text(*l.stages) + " x --replicas " + text(*l.replicas) + " is " +
                     text(*l.stages * *l.replicas) + " processes, the cluster has " + text(members) +
                     " members (this one and --peers)");
  for (const auto& [flag, n] : {std::pair{"--stages", l.stages}, std::pair{"--replicas", l.replicas}}) {
    if (n && members % *n != 0)
      throw UsageError(std::string(flag) + " " + text(*n) + " does not divide the cluster's " +
                       text(members) + " members (this one and --peers)");
  }
  // One of K and D fixes the other.
  if (l.stages && !l.replicas) l.replicas = members / *l.stages;
  if (l.replicas && !l.stages) l.stages = members / *l.replicas;
  if (l.replicas && batch % *l.replicas != 0)
    throw UsageError("--replicas " + text(*l.replicas) + " does not divide --batch " + text(batch) +
                     " (the global batch, which the replicas share)");
  if (l.micros && l.replicas && (batch / *l.replicas) % *l.micros != 0)
    throw UsageError("--micro-batches " + text(*l.micros) + " does not divide --batch " + text(batch) +
                     (*l.replicas > 1 ? " / --replicas " + text(*l.replicas) : std::string()));
  if (!o.checkpoint_dir.empty() && l.schedule == topology::PipelineSchedule::kOneFOneBAsync)
    throw UsageError(
        "--schedule 1f1b-async keeps micro-batches in flight from batch to batch and writes no "
        "checkpoints: drop --checkpoint-dir, or use 1f1b");
  if (l.partition && l.partition->stages() != *l.stages)
    throw UsageError("--partition " + f.partition + " has " + text(l.partition->stages()) +
                     " stages, --stages says " + text(*l.stages));
  if (plan_micro_batches(batch, members, layers, l).empty())
    throw UsageError(
        "no pipeline plan of " + text(members) + " processes fits --batch " + text(batch) +
        " and the model's " + text(layers) +
        " layers with the flags given: K x D must be the members, K no more than the layers, D and "
        "--micro-batches divide the batch");
}

PlanLimits resumed_limits(const RunOptions& o, PlanLimits l, size_t layers) {
  if (l.stages && l.replicas && l.partition) return l;
  const std::optional<std::string> layout = newest_layout(o.checkpoint_dir);
  if (!layout) return l;
  // What the flags leave to the planner, as the checkpoint has it; flags
  // that give another shape plan anew (and that checkpoint is refused by
  // its layout when it is read).
  const topology::PipelineShape shape = shape_of(*layout);
  if ((l.stages && *l.stages != shape.stages) || (l.replicas && *l.replicas != shape.replicas)) return l;
  l.stages = shape.stages;
  l.replicas = shape.replicas;
  if (!l.partition) l.partition = partition_of(*layout, layers);
  return l;
}

StateLayout pipeline_state_layout(const RunOptions& o, const PipelineFlags& f, const Placement& where,
                                  const trainer::Model& model) {
  const PlanLimits l = resumed_limits(o, pipeline_limits(f, model.layers().size()), model.layers().size());
  if (!l.stages || !l.replicas || !l.partition)
    return {"pipeline, planned at the start (no checkpoint yet)", 0, 0};
  const topology::PipelineShape shape{*l.stages, *l.replicas};
  const topology::PipelineCoord at = topology::pipeline_coord(shape, where.rank);
  size_t n = 0;
  for (size_t i = l.partition->begin(at.stage); i < l.partition->end(at.stage); ++i)
    n += model.layers()[i]->param_count();
  return {stage_name(shape, at, *l.partition), n, n};  // the optimizer's state: a velocity per parameter
}

}  // namespace gossipd::daemon
