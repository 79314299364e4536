#include "daemon/modes/pipeline/pipeline_mode.h"

#include <CLI/CLI.hpp>

#include "daemon/config/cli.h"
#include "daemon/modes/pipeline/pipeline_comm.h"
#include "daemon/modes/pipeline/pipeline_worker.h"

namespace gossipd::daemon {
namespace {

// "K" or "KxD"; nullopt when it is neither.
std::optional<topology::PipelineShape> parse_shape(const std::string& text) {
  const size_t x = text.find('x');
  const std::optional<size_t> k = entry_count(text.substr(0, x));
  const std::optional<size_t> d = x == std::string::npos ? size_t{1} : entry_count(text.substr(x + 1));
  if (!k || !d) return std::nullopt;
  return topology::PipelineShape{*k, *d};
}

// D pipelines each train on a shard of the data, batch / D a step: an
// epoch has the steps of one process taking the global batch.
size_t pipeline_steps(size_t samples, size_t batch) { return data_parallel_steps(samples, 1, batch); }

// One replica over K stages of consecutive layers, times D replicas
// (--stages, --replicas, or the plan the members agree on when they
// meet): a pipeline's processes sample its shard of the data, the first
// stage reads the samples, the last the labels.
class PipelineMode : public Mode {
 public:
  std::string name() const override { return "pipeline"; }
  std::string summary() const override {
    return "Pipeline: one replica over K stages of consecutive layers, micro-batches in flight, x D "
           "replicas; "
           "planned (gossipctl plan pipeline --procs P) unless "
           "--stages/--replicas/--micro-batches/--schedule "
           "fix it";
  }
  void add_flags(ModeFlags& f) override;
  void add_compare_flags(ModeFlags& f) override;
  void check_flags(const RunOptions&) const override {
    PipelineFlags counts = flags_;
    counts.partition = "auto";  // read against the model's layers, in check_model
    pipeline_limits(counts, 0);
  }

  uint32_t tag_count() const override { return PipelineComm::kTagCount; }
  std::string entry_syntax() const override { return "pipeline[:K[xD]]"; }
  EntryLaunch launch(const std::string& label, const std::string& arg, const EntryContext& c) const override;

  std::unique_ptr<Replica> load(const RunOptions& o, const Placement& where) const override {
    // The worker takes its replica's shard once the plan is agreed.
    return load_trained(o, where, whole_model(o), trainer_options(o.train).sampler);
  }
  void check_model(const RunOptions& o, size_t members, const trainer::Model& model) const override {
    check_pipeline(o, flags_, members, model);
  }
  size_t steps_per_epoch(const RunOptions&, size_t samples, size_t, size_t batch) const override {
    return pipeline_steps(samples, batch);
  }
  bool accepts_joins() const override { return false; }
  StateLayout state_layout(const RunOptions& o, const Placement& where, const Replica& r) const override {
    return pipeline_state_layout(o, flags_, where, r.trained()->trainer().model());
  }
  bool one_replica() const override { return true; }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override {
    return make_pipeline_worker(c, flags_, tags());
  }

 private:
  PipelineFlags flags_;
  struct {
    std::string partition = "auto";
    size_t micro_batches = 0;  // 0: auto, the planner's
  } compare_;                  // gossipctl compare's, for every pipeline entry
};

void PipelineMode::add_flags(ModeFlags& f) {
  f.option(
       "--stages", flags_.stages,
       "--algo pipeline: K stages of consecutive layers, one process each (rank r, members sorted by id, is "
       "stage r mod K of pipeline r / K), or auto: the planner's")
      ->capture_default_str();
  f.option(
       "--replicas", flags_.replicas,
       "--algo pipeline: D pipelines, each on its shard of the data and batch / D, averaging each stage's "
       "gradients (K x D members), or auto: the planner's")
      ->capture_default_str();
  f.option("--micro-batches", flags_.micro_batches,
           "--algo pipeline: M micro-batches per replica's batch (M divides --batch / D), or auto (0): the "
           "planner's")
      ->capture_default_str();
  f.option("--schedule", flags_.schedule,
           "--algo pipeline: gpipe (all forwards, then all backwards), 1f1b (at most K micro-batches held), "
           "zb (1f1b with each backward split: input gradient first, weights' gradient where 1f1b waits), "
           "1f1b-async (PipeDream: no drain, an update per micro-batch with weight stashing: another "
           "optimization, only when named), or auto: the planner's of gpipe, 1f1b and zb")
      ->check(CLI::IsMember({"auto", "gpipe", "1f1b", "1f1b-async", "zb"}))
      ->capture_default_str();
  f.option("--partition", flags_.partition,
           "--algo pipeline: auto (the planner's), L,L,... (layers per stage, with --stages), or the JSON a "
           "plan printed (--json)")
      ->capture_default_str();
}

void PipelineMode::add_compare_flags(ModeFlags& f) {
  f.option("--partition", compare_.partition,
           "Pipeline entries: gossipd run --partition (auto, L,L,... or a plan's JSON file)")
      ->capture_default_str();
  f.option("--micro-batches", compare_.micro_batches,
           "Pipeline entries: gossipd run --micro-batches (0: auto, the planner's)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 16))
      ->capture_default_str();
}

EntryLaunch PipelineMode::launch(const std::string& label, const std::string& arg,
                                 const EntryContext& c) const {
  std::optional<topology::PipelineShape> shape;
  if (!arg.empty()) {
    shape = parse_shape(arg);
    if (!shape)
      throw UsageError(
          "--algos " + label +
          ": give K stages or KxD (D pipelines of K stages), e.g. pipeline:2, or pipeline (planned)");
    if (c.workers != 0 && shape->procs() != c.workers) {
      throw UsageError("--algos " + label + " needs " + std::to_string(shape->procs()) +
                       " processes, --workers is " + std::to_string(c.workers));
    }
  }
  EntryLaunch l;
  // The global batch all data-parallel workers take together; the D
  // pipelines share it.
  l.batch = c.batch * c.workers;
  l.steps_per_epoch = pipeline_steps(c.train_samples, l.batch);
  l.flags = {"--partition", compare_.partition, "--micro-batches", std::to_string(compare_.micro_batches)};
  if (shape) {
    for (const std::string& f : {std::string("--stages"), std::to_string(shape->stages),
                                 std::string("--replicas"), std::to_string(shape->replicas)})
      l.flags.push_back(f);
  }
  return l;
}

}  // namespace

std::unique_ptr<Mode> make_pipeline_mode() { return std::make_unique<PipelineMode>(); }

}  // namespace gossipd::daemon
