#include "daemon/worker/pipeline_worker.h"

#include <spdlog/spdlog.h>

#include <array>
#include <filesystem>
#include <optional>

#include "daemon/cluster/replica_state.h"
#include "daemon/config/cli.h"
#include "daemon/pipeline/pipeline_step.h"
#include "daemon/plan/pipeline_plan.h"
#include "daemon/worker/gone_member.h"
#include "daemon/worker/grid_resume.h"
#include "daemon/worker/pipeline_partition.h"
#include "daemon/worker/sync_start.h"
#include "protocol/collectives.h"
#include "protocol/errors.h"
#include "protocol/tags.h"

namespace gossipd::daemon {
namespace {

topology::PipelineShape shape_of(const PipelineFlags& p) { return {p.stages, p.replicas}; }
size_t micros(const RunOptions& o, const PipelineFlags& p) {
  return topology::micro_batches_for(o.train.batch, p.micro_batches);
}

// Rounds (passes per layer) the auto partition times each layer with.
constexpr int kAutoReps = 10;

size_t stage_params(const trainer::Model& model, const topology::LayerRanges& r, size_t stage) {
  size_t n = 0;
  for (size_t i = r.begin(stage); i < r.end(stage); ++i) n += model.layers()[i]->param_count();
  return n;
}

class PipelineWorker : public SyncWorker {
 public:
  PipelineWorker(WorkerContext& c, const PipelineFlags& flags)
      : SyncWorker(c, "pipeline stage", "restart every stage with the same --stages and --partition"),
        p_(flags),
        shape_(shape_of(flags)),
        rank_(rank_of(c)),
        comm_(c.node, c.members, shape_, rank_, step_options(c.options)) {
    if (c.resume_state) resume_ = *c.resume_state;
    const std::string help = "Payload bytes the pipeline stage sent, by kind";
    for (const char* kind : {"activation", "input_gradient", "weight_gradient"})
      bytes_.push_back(&c.metrics.counter("gossipd_pipeline_payload_bytes_total", help, {{"kind", kind}}));
    const std::string place = "The pipeline's shape (dim stages = K, replicas = D) and this process's place";
    c.metrics.gauge("gossipd_pipeline_shape", place, {{"dim", "stages"}})
        .set(static_cast<double>(shape_.stages));
    c.metrics.gauge("gossipd_pipeline_shape", place, {{"dim", "replicas"}})
        .set(static_cast<double>(shape_.replicas));
    c.metrics.gauge("gossipd_pipeline_place", place, {{"dim", "stage"}})
        .set(static_cast<double>(comm_.at().stage));
    c.metrics.gauge("gossipd_pipeline_place", place, {{"dim", "replica"}})
        .set(static_cast<double>(comm_.at().replica));
  }

  void run(std::stop_token stop) override {
    const auto all = every_member_up(
        node_, protocol::tags::range(protocol::tags::User::kPipeline).at(PipelineComm::kStartTag), members_,
        options_, stop);
    set_up(resume_ ? partition_of(resume_->header.layout(), trainer_.model().layers().size())
                   : agree_on_partition(*all));
    header_.set_layout(stage_name(shape_, comm_.at(), ranges_));
    if (resume_) restore(*resume_);
    // Every stage goes on from the newest round every stage has a checkpoint of.
    if (auto back = state_to_go_back_to(*all, options_.checkpoint_dir, trainer_.step_count(), node_.id(),
                                        header_.layout(), stage_->params().size()))
      restore(*back);
    comm_.set_stop(stop);
    membership_.arm();
    loop_.run(
        steps_per_epoch_, stop, [&](std::span<const uint32_t> idx) { return guarded(idx, stop); },
        [&] { assemble(); });
    if (checkpointer_) checkpointer_->write_now(capture());
  }

 private:
  // The given partition, or (auto) the planner's on rank 0, which every
  // process takes: timings differ from process to process.
  topology::LayerRanges agree_on_partition(protocol::Group& all) {
    const size_t layers = trainer_.model().layers().size();
    std::optional<topology::LayerRanges> given = given_partition(p_.partition, layers);
    if (given) return *given;
    std::vector<float> counts(shape_.stages * members_.size(), 0.0f);
    if (rank_ == 0) {
      PipelinePlanInput in = measure_pipeline(trainer_.model(), trainer_.optimizer().options(),
                                              options_.train.batch / micros(options_, p_), kAutoReps);
      in.micros = micros(options_, p_);
      in.schedule = topology::parse_schedule(p_.schedule);
      in.link = LinkModel{10e-6, 4e9};  // loopback (gossipctl plan's default)
      const PipelinePlan plan = best_partition(in, shape_.stages);
      for (size_t k = 0; k < shape_.stages; ++k)
        counts[k] = static_cast<float>(plan.ranges.end(k) - plan.ranges.begin(k));
    }
    protocol::Allgather(all, counts).run();
    topology::LayerRanges r;
    r.first.push_back(0);
    for (size_t k = 0; k < shape_.stages; ++k)
      r.first.push_back(r.first.back() + static_cast<size_t>(counts[k]));
    return r;
  }

  void set_up(const topology::LayerRanges& ranges) {
    ranges_ = ranges;
    const size_t k = comm_.at().stage;
    stage_ = std::make_unique<trainer::Stage>(trainer_.model(), ranges.begin(k), ranges.end(k));
    optimizer_ = std::make_unique<trainer::Optimizer>(trainer_.optimizer().options(), stage_->segments(),
                                                      stage_->params().size());
    PipelineStepOptions o;
    o.schedule = topology::parse_schedule(p_.schedule);
    o.micros = micros(options_, p_);
    o.batch = options_.train.batch;
    o.steps_per_epoch = steps_per_epoch_;
    o.label_smoothing = options_.train.label_smoothing;
    step_ = std::make_unique<PipelineStep>(*stage_, comm_, *optimizer_, o);
    layers_ = std::to_string(stage_->first());
    layers_.push_back('-');
    layers_.append(std::to_string(stage_->last() - 1));
    for (size_t i = stage_->first(); i < stage_->last(); ++i) {
      layers_.push_back(' ');
      layers_.append(trainer_.model().layers()[i]->kind());
    }
    spdlog::info(
        "node '{}': pipeline {}x{} stage {} of replica {}: layers {} ({} of {} parameters), partition {}",
        node_.id(), shape_.stages, shape_.replicas, k, comm_.at().replica, layers_, stage_->params().size(),
        trainer_.model().params().size(), topology::layer_counts(ranges));
  }

  // A pipeline cannot go on without a stage: a failed step names the one gone.
  trainer::StepResult guarded(std::span<const uint32_t> idx, std::stop_token stop) {
    return naming_the_gone(gone_, trainer_.step_count() + 1, stop, [&] { return train(idx); });
  }

  // This stage's parameters and optimizer state, for its checkpoints.
  ReplicaState capture() {
    return replica_state(header_, trainer_.step_count(), steps_per_epoch_, stage_->params(),
                         optimizer_->state());
  }

  void restore(const ReplicaState& st) {
    std::copy(st.params.begin(), st.params.end(), stage_->params().begin());
    std::copy(st.optimizer.begin(), st.optimizer.end(), optimizer_->state().begin());
    trainer_.set_step_count(st.header.step());
  }

  // The first stage reads the samples, the last the labels.
  trainer::StepResult train(std::span<const uint32_t> idx) {
    if (checkpointer_) checkpointer_->at_step(trainer_.step_count(), [&] { return capture(); });
    const trainer::Dataset& data = trainer_.train_data();
    if (comm_.first()) {
      x_.resize(idx.size() * data.sample_size());
      for (size_t i = 0; i < idx.size(); ++i)
        std::copy_n(data.image(idx[i]), data.sample_size(),
                    x_.begin() + static_cast<ptrdiff_t>(i * data.sample_size()));
    }
    if (comm_.last()) {
      y_.resize(idx.size());
      for (size_t i = 0; i < idx.size(); ++i) y_[i] = data.labels[idx[i]];
    }
    const trainer::LossResult r = step_->train(x_, y_, trainer_.current_lr());
    trainer_.count_step();
    publish();
    // The loss is the last stage's; the others count the samples they passed.
    return {r.loss, r.correct, static_cast<int>(idx.size())};
  }

  void publish() {
    const PipelineBytes& b = comm_.bytes();
    const uint64_t now[] = {b.activation, b.input_gradient, b.weight_gradient};
    for (size_t k = 0; k < bytes_.size(); ++k) {
      bytes_[k]->add(static_cast<double>(now[k] - published_[k]));
      published_[k] = now[k];
    }
    const double steps = static_cast<double>(++steps_);
    if (step_->span_seconds() > 0) bubble_sum_ += 1.0 - step_->busy_seconds() / step_->span_seconds();
    state_.update([&](proto::Status& s) {
      proto::PipelineStatus& p = *s.mutable_pipeline();
      p.set_stages(static_cast<uint32_t>(shape_.stages));
      p.set_replicas(static_cast<uint32_t>(shape_.replicas));
      p.set_stage(static_cast<uint32_t>(comm_.at().stage));
      p.set_replica(static_cast<uint32_t>(comm_.at().replica));
      p.set_partition(topology::layer_counts(ranges_));
      p.set_layers(layers_);
      p.set_schedule(p_.schedule);
      p.set_micro_batches(static_cast<uint32_t>(micros(options_, p_)));
      p.set_most_in_flight(static_cast<uint32_t>(stage_->most_in_flight()));
      p.set_most_stashed_bytes(sizeof(float) * stage_->most_stashed_floats());
      p.set_bubble(bubble_sum_ / steps);
      p.set_activation_bytes_per_step(static_cast<double>(b.activation) / steps);
      p.set_input_gradient_bytes_per_step(static_cast<double>(b.input_gradient) / steps);
      p.set_weight_gradient_bytes_per_step(static_cast<double>(b.weight_gradient) / steps);
    });
  }

  // The whole model into the trainer's, for an evaluation: the stages of a
  // pipeline hold every layer between them.
  void assemble() {
    std::vector<size_t> counts;
    for (size_t k = 0; k < shape_.stages; ++k) {
      size_t n = 0;
      for (size_t i = ranges_.begin(k); i < ranges_.end(k); ++i)
        n += trainer_.model().layers()[i]->param_count();
      counts.push_back(n);
    }
    comm_.gather_parameters(trainer_.model().params(), counts);
  }

  PipelineFlags p_;
  topology::PipelineShape shape_;
  size_t rank_;
  PipelineComm comm_;
  std::optional<ReplicaState> resume_;  // the checkpoint it was restarted from
  topology::LayerRanges ranges_;
  std::unique_ptr<trainer::Stage> stage_;
  std::unique_ptr<trainer::Optimizer> optimizer_;
  std::unique_ptr<PipelineStep> step_;
  std::string layers_;           // "0-2 conv2d relu maxpool"
  std::vector<Counter*> bytes_;  // gossipd_pipeline_payload_bytes_total by kind
  std::array<uint64_t, 3> published_{};
  uint64_t steps_ = 0;
  double bubble_sum_ = 0;
};

}  // namespace

StateLayout pipeline_state_layout(const RunOptions& o, const PipelineFlags& p, const Placement& where,
                                  const trainer::Trainer& trainer) {
  const trainer::Model& model = trainer.model();
  const topology::PipelineShape shape = shape_of(p);
  const topology::PipelineCoord at = topology::pipeline_coord(shape, where.rank);
  std::optional<topology::LayerRanges> r = given_partition(p.partition, model.layers().size());
  // auto: the partition of the newest checkpoint that reads (the one a
  // restart resumes from), so a restart keeps it.
  for (const auto& file : r ? std::vector<std::filesystem::path>{} : list_checkpoints(o.checkpoint_dir)) {
    try {
      r = partition_of(read_checkpoint(file).state.header.layout(), model.layers().size());
      break;
    } catch (const CheckpointError&) {
    }
  }
  if (!r) return {"pipeline, partition auto (no checkpoint yet)", 0, 0};
  const size_t n = stage_params(model, *r, at.stage);
  return {stage_name(shape, at, *r), n, n};  // the optimizer's state: a velocity per parameter
}

void check_pipeline(const RunOptions& o, const PipelineFlags& p, size_t members,
                    const trainer::Model& model) {
  const size_t layers = model.layers().size();
  if (p.stages > layers)
    throw UsageError("--stages " + std::to_string(p.stages) + " is more than the model's " +
                     std::to_string(layers) + " layers");
  if (p.stages * p.replicas != members)
    throw UsageError("--stages " + std::to_string(p.stages) + " x --replicas " + std::to_string(p.replicas) +
                     " is " + std::to_string(p.stages * p.replicas) + " processes, the cluster has " +
                     std::to_string(members) + " members (this one and --peers)");
  if (o.train.batch % micros(o, p) != 0)
    throw UsageError("--micro-batches " + std::to_string(micros(o, p)) + " does not divide --batch " +
                     std::to_string(o.train.batch));
  const std::optional<topology::LayerRanges> r = given_partition(p.partition, layers);
  if (!o.checkpoint_dir.empty() && p.schedule == "1f1b-async")
    throw UsageError(
        "--schedule 1f1b-async keeps micro-batches in flight from batch to batch and writes no "
        "checkpoints: drop --checkpoint-dir, or use 1f1b");
  if (r && r->stages() != p.stages)
    throw UsageError("--partition " + p.partition + " has " + std::to_string(r->stages()) +
                     " stages, --stages says " + std::to_string(p.stages));
}

trainer::SamplerOptions pipeline_shard(const RunOptions& o, const PipelineFlags& p, const Placement& where) {
  trainer::SamplerOptions s = trainer_options(o.train).sampler;
  const size_t stages = std::max<size_t>(p.stages, 1);
  s.worker_index = static_cast<int>(where.rank / stages);
  s.worker_count = static_cast<int>(std::max<size_t>(p.replicas, 1));
  return s;
}

std::unique_ptr<Worker> make_pipeline_worker(WorkerContext& c, const PipelineFlags& flags) {
  return std::make_unique<PipelineWorker>(c, flags);
}

}  // namespace gossipd::daemon
