#include "daemon/modes/grid/grid_worker.h"

#include <spdlog/spdlog.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>

#include "daemon/config/cli.h"
#include "daemon/modes/grid/grid_plan.h"
#include "daemon/modes/grid/grid_status.pb.h"
#include "daemon/modes/grid/grid_step.h"
#include "daemon/modes/grid/timed_grid_comm.h"
#include "daemon/observe/message_json.h"
#include "daemon/worker/gone_member.h"
#include "daemon/worker/spread_resume.h"
#include "daemon/worker/sync_start.h"
#include "protocol/collectives/barrier.h"
#include "protocol/collectives/collectives.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {
namespace {

class GridWorker : public SyncWorker {
 public:
  // Keeps what it needs of `c` (the context lives only while the worker is made).
  GridWorker(WorkerContext& c, topology::GridShape shape, protocol::tags::Range tags)
      : SyncWorker(c, "grid cell", "restart every cell with the same --grid"),
        shape_(shape),
        tags_(tags),
        at_(topology::grid_coord(shape, rank_of(c))),
        model_(plan_layers(c.trainer().model()), shape, at_),
        comm_(c.node, c.members, shape, rank_of(c), step_options(c.options), tags),
        timed_(comm_, c.loop()),
        step_(model_, timed_, c.options.train.label_smoothing),
        optimizer_(c.trainer().optimizer().options(), model_.segments(), model_.params().size()),
        slice_(topology::block_range(c.options.train.batch, shape.cols, at_.col)) {
    header_.set_layout(cell_name(shape_, at_));
    if (c.resume_state) {
      restore(*c.resume_state);
    } else {
      model_.load(c.trainer().model().params());
    }
    const std::string help = "Payload bytes the grid step's collectives sent, by kind";
    const std::string seconds_help = "Seconds the grid step waited on its collectives, by kind";
    for (const char* kind : TimedGridComm::kKindNames) {
      bytes_.push_back(&c.metrics.counter("gossipd_grid_payload_bytes_total", help, {{"kind", kind}}));
      seconds_.push_back(
          &c.metrics.counter("gossipd_grid_comm_seconds_total", seconds_help, {{"kind", kind}}));
    }
    const std::string shape_help = "The grid's shape (dim rows = Pr, cols = Pc) and this cell's place in it";
    c.metrics.gauge("gossipd_grid_shape", shape_help, {{"dim", "rows"}}).set(static_cast<double>(shape.rows));
    c.metrics.gauge("gossipd_grid_shape", shape_help, {{"dim", "cols"}}).set(static_cast<double>(shape.cols));
    c.metrics.gauge("gossipd_grid_cell", shape_help, {{"dim", "row"}}).set(static_cast<double>(at_.row));
    c.metrics.gauge("gossipd_grid_cell", shape_help, {{"dim", "col"}}).set(static_cast<double>(at_.col));
  }

  void run(std::stop_token stop) override {
    const auto all = every_member_up(node_, tags_.at(GroupGridComm::kStartTag), members_, options_, stop);
    // Every cell goes on from the newest round every cell has a checkpoint of.
    if (auto back = state_to_go_back_to(*all, options_.checkpoint_dir, trainer_.step_count(), node_.id(),
                                        header_.layout(), model_.params().size()))
      restore(*back);
    comm_.set_stop(stop);
    membership_.arm();
    spdlog::info(
        "node '{}': grid {} cell (row {}, column {}): {} of {} parameters, samples [{}, {}) of each batch",
        node_.id(), shape_.name(), at_.row, at_.col, model_.params().size(), trainer_.model().params().size(),
        slice_.begin, slice_.end);
    loop_.run(
        steps_per_epoch_, stop, [&](std::span<const uint32_t> idx) { return guarded(idx, stop); },
        [&] { assemble(); });
    if (checkpointer_) checkpointer_->write_now(capture());
  }

 private:
  // A grid cannot go on without a cell: a failed step names the one gone.
  trainer::StepResult guarded(std::span<const uint32_t> idx, std::stop_token stop) {
    return naming_the_gone(gone_, trainer_.step_count() + 1, stop, [&] { return train(idx); });
  }

  trainer::StepResult train(std::span<const uint32_t> idx) {
    if (checkpointer_) checkpointer_->at_step(trainer_.step_count(), [&] { return capture(); });
    const trainer::Dataset& data = trainer_.train_data();
    const size_t b = std::min(slice_.end, idx.size()) - std::min(slice_.begin, idx.size());
    x_.resize(b * data.sample_size());
    y_.resize(b);
    for (size_t i = 0; i < b; ++i) {
      const uint32_t s = idx[slice_.begin + i];
      std::copy_n(data.image(s), data.sample_size(),
                  x_.begin() + static_cast<ptrdiff_t>(i * data.sample_size()));
      y_[i] = data.labels[s];
    }
    const trainer::LossResult r = step_.train(x_.data(), y_, idx.size());
    step_.update(optimizer_, trainer_.current_lr());
    trainer_.count_step();
    publish();
    return {r.loss, r.correct, static_cast<int>(b)};
  }

  // This cell's share of the replica, for its checkpoints.
  ReplicaState capture() {
    return replica_state(header_, trainer_.step_count(), steps_per_epoch_, model_.params(),
                         optimizer_.state());
  }

  void restore(const ReplicaState& st) {
    std::copy(st.params.begin(), st.params.end(), model_.params().begin());
    std::copy(st.optimizer.begin(), st.optimizer.end(), optimizer_.state().begin());
    trainer_.set_step_count(st.header.step());
  }

  // The step's bytes and communication seconds by kind: counters in
  // /metrics, per-step means in /status.
  void publish() {
    const GridBytes& b = comm_.bytes();
    const uint64_t now[] = {b.forward, b.input_gradient, b.weight_gradient, b.halo};
    const auto& seconds = timed_.seconds();
    for (size_t k = 0; k < bytes_.size(); ++k) {
      bytes_[k]->add(static_cast<double>(now[k] - published_[k]));
      published_[k] = now[k];
      seconds_[k]->add(seconds[k] - published_seconds_[k]);
      published_seconds_[k] = seconds[k];
    }
    const double steps = static_cast<double>(++steps_);
    state_.update([&](proto::Status& s) {
      update_mode_status<proto::GridStatus>(s, [&](proto::GridStatus& g) {
        g.set_rows(static_cast<uint32_t>(shape_.rows));
        g.set_cols(static_cast<uint32_t>(shape_.cols));
        g.set_row(static_cast<uint32_t>(at_.row));
        g.set_col(static_cast<uint32_t>(at_.col));
        g.set_forward_bytes_per_step(static_cast<double>(b.forward) / steps);
        g.set_input_gradient_bytes_per_step(static_cast<double>(b.input_gradient) / steps);
        g.set_weight_gradient_bytes_per_step(static_cast<double>(b.weight_gradient) / steps);
        g.set_halo_bytes_per_step(static_cast<double>(b.halo) / steps);
        g.set_forward_seconds_per_step(seconds[TimedGridComm::kForward] / steps);
        g.set_input_gradient_seconds_per_step(seconds[TimedGridComm::kInputGradient] / steps);
        g.set_weight_gradient_seconds_per_step(seconds[TimedGridComm::kWeightGradient] / steps);
        g.set_halo_seconds_per_step(seconds[TimedGridComm::kHalo] / steps);
      });
    });
  }

  // The whole model into the trainer's, for an evaluation: the cells of a
  // grid column hold every row block between them.
  void assemble() {
    std::vector<size_t> counts, offsets{0};  // row r's block: all_[offsets[r], offsets[r + 1])
    for (size_t r = 0; r < shape_.rows; ++r) {
      counts.push_back(model_.row_params(r));
      offsets.push_back(offsets.back() + counts.back());
    }
    all_.resize(offsets.back());
    std::copy(model_.params().begin(), model_.params().end(),
              all_.begin() + static_cast<ptrdiff_t>(offsets[at_.row]));
    if (shape_.rows > 1) comm_.gather_parameters(all_, counts);
    for (size_t r = 0; r < shape_.rows; ++r)
      model_.store_row(r, std::span<const float>(all_).subspan(offsets[r], counts[r]),
                       trainer_.model().params());
  }

  topology::GridShape shape_;
  protocol::tags::Range tags_;
  topology::GridCoord at_;
  GridModel model_;
  GroupGridComm comm_;
  TimedGridComm timed_;
  GridStep step_;
  trainer::Optimizer optimizer_;
  topology::BlockRange slice_;
  std::vector<float> all_;               // the column's parameter blocks, for an evaluation
  std::vector<Counter*> bytes_;          // gossipd_grid_payload_bytes_total by kind
  std::array<uint64_t, 4> published_{};  // what bytes_ holds of comm_.bytes()
  std::vector<Counter*> seconds_;        // gossipd_grid_comm_seconds_total by kind
  std::array<double, 4> published_seconds_{};
  uint64_t steps_ = 0;  // this run's steps, for the per-step means
};

}  // namespace

void check_grid(const RunOptions& o, const std::string& grid, size_t members, const trainer::Model& model) {
  topology::GridShape shape;
  try {
    shape = topology::parse_grid_shape(grid);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--grid: ") + e.what());
  }
  if (shape.procs() != members) {
    throw UsageError("--grid " + shape.name() + " has " + std::to_string(shape.procs()) +
                     " cells, the cluster " + std::to_string(members) + " members (this one and --peers)");
  }
  GridPlanInput in;
  in.layers = plan_layers(model);
  in.batch = o.train.batch;
  std::optional<std::string> why = grid_refusal(in, shape);
  if (!why) why = GridModel::refusal(in.layers);
  if (why) throw UsageError("--grid " + shape.name() + ": " + *why);
}

std::string cell_name(topology::GridShape shape, topology::GridCoord at) {
  return "grid " + shape.name() + " cell (row " + std::to_string(at.row) + ", column " +
         std::to_string(at.col) + ")";
}

StateLayout grid_state_layout(topology::GridShape shape, const Placement& where,
                              const trainer::Trainer& trainer) {
  const topology::GridCoord at = topology::grid_coord(shape, where.rank);
  const size_t n = GridModel(plan_layers(trainer.model()), shape, at).row_params(at.row);
  return {cell_name(shape, at), n, n};  // the optimizer's state: a velocity per parameter
}

std::unique_ptr<Worker> make_grid_worker(WorkerContext& c, topology::GridShape shape,
                                         protocol::tags::Range tags) {
  return std::make_unique<GridWorker>(c, shape, tags);
}

}  // namespace gossipd::daemon
