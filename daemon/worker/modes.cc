#include "daemon/worker/modes.h"

#include <algorithm>

#include "daemon/config/cli.h"
#include "daemon/worker/allreduce_worker.h"
#include "daemon/worker/gossip_worker.h"
#include "daemon/worker/grid_worker.h"
#include "daemon/worker/groups_worker.h"
#include "daemon/worker/pipeline_worker.h"
#include "trainer/models.h"

namespace gossipd::daemon {

std::unique_ptr<trainer::Model> whole_model(const RunOptions& o) {
  return trainer::make_model(model_options(o.train), o.train.seed);
}

StateLayout whole_state(const RunOptions&, const Placement&, const trainer::Trainer& trainer) {
  return {"", trainer.model().params().size(), trainer.optimizer().state().size()};
}

trainer::SamplerOptions shard_per_member(const RunOptions& o, const Placement& where) {
  trainer::SamplerOptions s = trainer_options(o.train).sampler;
  if (where.joining) {
    s.mode = trainer::SamplingMode::kRandom;
    s.seed = o.train.seed ^ std::hash<std::string>{}(o.id);
  } else {
    s.worker_index = static_cast<int>(where.rank);
    s.worker_count = static_cast<int>(where.members);
  }
  return s;
}

size_t data_parallel_steps(size_t samples, size_t members, size_t batch) {
  const size_t per_member = samples / std::max<size_t>(members, 1);
  return std::max<size_t>(1, per_member / std::max<size_t>(batch, 1));
}

size_t data_parallel_epoch(const RunOptions&, size_t samples, size_t members, size_t batch) {
  return data_parallel_steps(samples, members, batch);
}

namespace {

// A data-parallel mode: the whole model on every member, a shard of the data each.
Mode data_parallel(std::string name, std::string summary,
                   std::function<std::unique_ptr<Worker>(WorkerContext&)> make) {
  return Mode{std::move(name), std::move(summary), whole_model, shard_per_member, data_parallel_epoch, true,
              whole_state,     std::move(make)};
}

Mode one_replica(Mode m) {
  m.one_replica = true;
  return m;
}

// Compute groups (--compute-groups): data parallel, synchronous inside a
// group, asynchronous between groups; no joiners (the groups are the
// initial members').
Mode groups_mode() {
  Mode m = data_parallel("groups",
                         "Compute groups: AllReduce-SGD inside each of g groups (--compute-groups), "
                         "Crossover-SGD between groups "
                         "in the background, no group waiting for another",
                         make_groups_worker);
  m.accepts_joins = false;
  m.check = check_groups;
  return m;
}

// One replica over a Pr x Pc grid (--grid): every member samples the
// grid's batches, its column trains on its slice of each.
Mode grid_mode() {
  Mode m{
      "grid",
      "Grid: one replica over a Pr x Pc process grid (dense rows and image rows over Pr, the batch over Pc)",
      whole_model,
      [](const RunOptions& o, const Placement&) { return trainer_options(o.train).sampler; },
      [](const RunOptions&, size_t samples, size_t, size_t batch) {
        return data_parallel_steps(samples, 1, batch);
      },
      false,
      grid_state_layout,
      make_grid_worker};
  m.check = check_grid;
  return one_replica(std::move(m));
}

// One replica over K stages of consecutive layers, times D replicas
// (--stages, --replicas): a pipeline's processes sample its shard of the
// data, the first stage reads the samples, the last the labels.
Mode pipeline_mode() {
  Mode m{"pipeline",
         "Pipeline: one replica over K stages of consecutive layers (--stages), micro-batches in flight, "
         "x D replicas",
         whole_model,
         pipeline_shard,
         [](const RunOptions& o, size_t samples, size_t, size_t batch) {
           return data_parallel_steps(samples, std::max<size_t>(o.replicas, 1), batch);
         },
         false,
         pipeline_state_layout,
         make_pipeline_worker};
  m.check = check_pipeline;
  return one_replica(std::move(m));
}

// One sparse network's neurons over the members (--partition): a run of
// its own (daemon/cmd/run_sparse), its model being no trainer::Model.
Mode sparse_mode() {
  Mode m;
  m.name = "sparse";
  m.summary =
      "Sparse: one sparse network (RadiX-Net, --neurons, --layers), every layer's neurons over the members "
      "(--partition), row-parallel";
  m.accepts_joins = false;
  m.one_replica = true;
  m.own_run = true;
  return m;
}

}  // namespace

const std::vector<Mode>& modes() {
  static const std::vector<Mode> all{
      one_replica(data_parallel("allreduce", "AllReduce-SGD: ring allreduce of the gradients every step",
                                make_allreduce_worker)),
      data_parallel("crossover", "Crossover-SGD: segments averaged with peers drawn by random derangements",
                    [](WorkerContext& c) { return make_gossip_worker(c, GossipAlgo::kCrossover); }),
      data_parallel("sgp", "Stochastic Gradient Push: push-sum over a time-varying exponential graph",
                    [](WorkerContext& c) { return make_gossip_worker(c, GossipAlgo::kSgp); }),
      data_parallel("osgp", "Overlapped SGP: messages folded in one round late",
                    [](WorkerContext& c) { return make_gossip_worker(c, GossipAlgo::kOsgp); }),
      groups_mode(),
      grid_mode(),
      pipeline_mode(),
      sparse_mode(),
  };
  return all;
}

const Mode& find_mode(std::string_view name) {
  for (const Mode& m : modes()) {
    if (m.name == name) return m;
  }
  std::string names;
  for (const Mode& m : modes()) names += (names.empty() ? "" : ", ") + m.name;
  throw UsageError("--algo " + std::string(name) + " is not a mode; the modes are " + names);
}

std::vector<std::string> mode_names() {
  std::vector<std::string> names;
  for (const Mode& m : modes()) names.push_back(m.name);
  return names;
}

}  // namespace gossipd::daemon
