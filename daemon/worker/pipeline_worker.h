#pragma once

#include <memory>
#include <optional>
#include <string>

#include "daemon/worker/replica.h"
#include "daemon/worker/worker.h"
#include "topology/pipeline.h"

namespace gossipd::daemon {

// gossipd run's flags of --algo pipeline (daemon/worker/pipeline_mode.cc).
struct PipelineFlags {
  size_t stages = 0;         // K; 0: not given
  size_t micro_batches = 0;  // M; 0: topology::default_micro_batches(batch)
  std::string schedule = "1f1b";
  std::string partition = "auto";  // auto | L,L,... (layers per stage) | a plan's JSON file
  size_t replicas = 1;             // D
};

// --algo pipeline: this process is one stage (a range of layers) of one of
// --replicas pipelines, each holding the model replica in --stages stages
// (daemon/pipeline). The processes of a pipeline sample the same batches
// (their shard of the data), the first stage reads the samples, the last
// the labels.
std::unique_ptr<Worker> make_pipeline_worker(WorkerContext& context, const PipelineFlags& flags);

// K x D = the members, M divides the batch, K no more than the model's
// layers, a given partition covers the model in K stages (throws
// UsageError naming what does not fit).
void check_pipeline(const RunOptions& options, const PipelineFlags& flags, size_t members,
                    const trainer::Model& model);

// Every pipeline member samples its pipeline's shard of the data.
trainer::SamplerOptions pipeline_shard(const RunOptions& options, const PipelineFlags& flags,
                                       const Placement& where);

// What a stage's checkpoint holds: its layers' parameters and optimizer
// state. Under --partition auto, the partition of the newest checkpoint in
// --checkpoint-dir (a restart keeps the partition it was written with).
StateLayout pipeline_state_layout(const RunOptions& options, const PipelineFlags& flags,
                                  const Placement& where, const trainer::Trainer& trainer);

}  // namespace gossipd::daemon
