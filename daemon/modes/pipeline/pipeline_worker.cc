#include "daemon/modes/pipeline/pipeline_worker.h"

#include <spdlog/spdlog.h>

#include <array>
#include <filesystem>
#include <optional>

#include "daemon/cluster/replica_state.h"
#include "daemon/config/cli.h"
#include "daemon/modes/pipeline/pipeline_agreement.h"
#include "daemon/modes/pipeline/pipeline_partition.h"
#include "daemon/modes/pipeline/pipeline_plan.h"
#include "daemon/modes/pipeline/pipeline_status.pb.h"
#include "daemon/modes/pipeline/pipeline_step.h"
#include "daemon/observe/message_json.h"
#include "daemon/worker/gone_member.h"
#include "daemon/worker/spread_resume.h"
#include "daemon/worker/sync_start.h"
#include "protocol/collectives/collectives.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {
namespace {

class PipelineWorker : public SyncWorker {
 public:
  PipelineWorker(WorkerContext& c, const PipelineFlags& flags, protocol::tags::Range tags)
      : SyncWorker(c, "pipeline stage",
                   "restart every stage with the same flags (from checkpoints: they keep their shape and "
                   "partition)"),
        p_(flags),
        rank_(rank_of(c)),
        tags_(tags),
        metrics_(c.metrics) {
    if (c.resume_state) resume_ = *c.resume_state;
  }

  void run(std::stop_token stop) override {
    const auto all = every_member_up(node_, tags_.at(PipelineComm::kStartTag), members_, options_, stop);
    const size_t layers = trainer_.model().layers().size();
    const PlanLimits limits = resumed_limits(options_, pipeline_limits(p_, layers), layers);
    setup_ = agree_on_plan(*all, rank_, trainer_.model(), trainer_.optimizer().options(),
                           {options_.train.batch, members_.size(), limits, link(), options_.cache_dir});
    comm_ =
        std::make_unique<PipelineComm>(node_, members_, setup_.shape, rank_, step_options(options_), tags_);
    trainer::SamplerOptions shard = trainer_.options().sampler;
    shard.worker_index = static_cast<int>(comm_->at().replica);
    shard.worker_count = static_cast<int>(setup_.shape.replicas);
    trainer_.reshard(shard, options_.train.batch / setup_.shape.replicas);
    export_place();
    set_up(setup_.ranges);
    header_.set_layout(stage_name(setup_.shape, comm_->at(), ranges_));
    if (resume_) restore(*resume_);
    // Every stage goes on from the newest round every stage has a checkpoint of.
    if (auto back = state_to_go_back_to(*all, options_.checkpoint_dir, trainer_.step_count(), node_.id(),
                                        header_.layout(), stage_->params().size()))
      restore(*back);
    comm_->set_stop(stop);
    membership_.arm();
    loop_.run(
        steps_per_epoch_, stop, [&](std::span<const uint32_t> idx) { return guarded(idx, stop); },
        [&] { assemble(); });
    if (checkpointer_) checkpointer_->write_now(capture());
  }

 private:
  // The link the plan is priced on: shared memory when every other member's
  // direct links go through it (all on this host), the sockets' otherwise.
  LinkModel link() const {
    for (const std::string& m : members_)
      if (m != node_.id() && !node_.shares_memory_with(m)) return kLoopback;
    return kSharedMemory;
  }

  void export_place() {
    const std::string help = "Payload bytes the pipeline stage sent, by kind";
    for (const char* kind : {"activation", "input_gradient", "weight_gradient"})
      bytes_.push_back(&metrics_.counter("gossipd_pipeline_payload_bytes_total", help, {{"kind", kind}}));
    const std::string place = "The pipeline's shape (dim stages = K, replicas = D) and this process's place";
    const topology::PipelineShape shape = setup_.shape;
    metrics_.gauge("gossipd_pipeline_shape", place, {{"dim", "stages"}})
        .set(static_cast<double>(shape.stages));
    metrics_.gauge("gossipd_pipeline_shape", place, {{"dim", "replicas"}})
        .set(static_cast<double>(shape.replicas));
    metrics_.gauge("gossipd_pipeline_place", place, {{"dim", "stage"}})
        .set(static_cast<double>(comm_->at().stage));
    metrics_.gauge("gossipd_pipeline_place", place, {{"dim", "replica"}})
        .set(static_cast<double>(comm_->at().replica));
  }

  void set_up(const topology::LayerRanges& ranges) {
    ranges_ = ranges;
    const size_t k = comm_->at().stage;
    stage_ = std::make_unique<trainer::Stage>(trainer_.model(), ranges.begin(k), ranges.end(k));
    optimizer_ = std::make_unique<trainer::Optimizer>(trainer_.optimizer().options(), stage_->segments(),
                                                      stage_->params().size());
    PipelineStepOptions o;
    o.schedule = setup_.schedule;
    o.micros = setup_.micros;
    o.batch = options_.train.batch / setup_.shape.replicas;
    o.steps_per_epoch = steps_per_epoch_;
    o.label_smoothing = options_.train.label_smoothing;
    step_ = std::make_unique<PipelineStep>(*stage_, *comm_, *optimizer_, o);
    layers_ = std::to_string(stage_->first());
    layers_.push_back('-');
    layers_.append(std::to_string(stage_->last() - 1));
    for (size_t i = stage_->first(); i < stage_->last(); ++i) {
      layers_.push_back(' ');
      layers_.append(trainer_.model().layers()[i]->kind());
    }
    spdlog::info(
        "node '{}': pipeline {}x{} stage {} of replica {}: layers {} ({} of {} parameters), partition {}",
        node_.id(), setup_.shape.stages, setup_.shape.replicas, k, comm_->at().replica, layers_,
        stage_->params().size(), trainer_.model().params().size(), topology::layer_counts(ranges));
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
    if (comm_->first()) {
      x_.resize(idx.size() * data.sample_size());
      for (size_t i = 0; i < idx.size(); ++i)
        std::copy_n(data.image(idx[i]), data.sample_size(),
                    x_.begin() + static_cast<ptrdiff_t>(i * data.sample_size()));
    }
    if (comm_->last()) {
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
    const PipelineBytes& b = comm_->bytes();
    const uint64_t now[] = {b.activation, b.input_gradient, b.weight_gradient};
    for (size_t k = 0; k < bytes_.size(); ++k) {
      bytes_[k]->add(static_cast<double>(now[k] - published_[k]));
      published_[k] = now[k];
    }
    const double steps = static_cast<double>(++steps_);
    if (step_->span_seconds() > 0) bubble_sum_ += 1.0 - step_->busy_seconds() / step_->span_seconds();
    state_.update([&](proto::Status& s) {
      update_mode_status<proto::PipelineStatus>(s, [&](proto::PipelineStatus& p) {
        p.set_stages(static_cast<uint32_t>(setup_.shape.stages));
        p.set_replicas(static_cast<uint32_t>(setup_.shape.replicas));
        p.set_stage(static_cast<uint32_t>(comm_->at().stage));
        p.set_replica(static_cast<uint32_t>(comm_->at().replica));
        p.set_partition(topology::layer_counts(ranges_));
        p.set_layers(layers_);
        p.set_schedule(topology::schedule_name(setup_.schedule));
        p.set_micro_batches(static_cast<uint32_t>(setup_.micros));
        p.set_predicted_step_seconds(setup_.predicted_step_s);
        p.set_plan(setup_.how);
        p.set_most_in_flight(static_cast<uint32_t>(stage_->most_in_flight()));
        p.set_most_stashed_bytes(sizeof(float) * stage_->most_stashed_floats());
        p.set_bubble(bubble_sum_ / steps);
        p.set_activation_bytes_per_step(static_cast<double>(b.activation) / steps);
        p.set_input_gradient_bytes_per_step(static_cast<double>(b.input_gradient) / steps);
        p.set_weight_gradient_bytes_per_step(static_cast<double>(b.weight_gradient) / steps);
      });
    });
  }

  // The whole model into the trainer's, for an evaluation: the stages of a
  // pipeline hold every layer between them.
  void assemble() {
    std::vector<size_t> counts;
    for (size_t k = 0; k < setup_.shape.stages; ++k) {
      size_t n = 0;
      for (size_t i = ranges_.begin(k); i < ranges_.end(k); ++i)
        n += trainer_.model().layers()[i]->param_count();
      counts.push_back(n);
    }
    comm_->gather_parameters(trainer_.model().params(), counts);
  }

  PipelineFlags p_;
  size_t rank_;
  protocol::tags::Range tags_;
  MetricsRegistry& metrics_;
  PipelineSetup setup_;
  std::unique_ptr<PipelineComm> comm_;
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

std::unique_ptr<Worker> make_pipeline_worker(WorkerContext& c, const PipelineFlags& flags,
                                             protocol::tags::Range tags) {
  return std::make_unique<PipelineWorker>(c, flags, tags);
}

}  // namespace gossipd::daemon
