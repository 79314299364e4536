#include "daemon/modes/grid/grid_mode.h"

#include <CLI/CLI.hpp>

#include "daemon/config/cli.h"
#include "daemon/modes/grid/grid_comm.h"
#include "daemon/modes/grid/grid_worker.h"

namespace gossipd::daemon {
namespace {

// One replica over a Pr x Pc grid (--grid): every member samples the
// grid's batches, its column trains on its slice of each.
class GridMode : public Mode {
 public:
  std::string name() const override { return "grid"; }
  std::string summary() const override {
    return "Grid: one replica over a Pr x Pc process grid (dense rows and image rows over Pr, the batch over "
           "Pc)";
  }

  void add_flags(ModeFlags& f) override {
    f.option("--grid", grid_,
             "--algo grid: PRxPC, Pr processes split every dense layer's rows and the images' rows, Pc "
             "columns split --batch (the grid's batch); rank r (members sorted by id) is row r mod Pr of "
             "column r / Pr");
    f.describe("--batch", "--algo grid: the grid's batch, over its columns");
  }
  void add_compare_flags(ModeFlags& f) override {
    f.describe("--algos",
               "grid:PRxPC: one replica over --workers = PR x PC cells at --workers x --batch, the "
               "same global batch");
  }
  void check_flags(const RunOptions&) const override {
    if (grid_.empty()) throw UsageError("--algo grid needs --grid PRxPC (e.g. --grid 2x2)");
  }

  uint32_t tag_count() const override { return GroupGridComm::kTagCount; }
  std::string entry_syntax() const override { return "grid:PRxPC"; }
  EntryLaunch launch(const std::string& label, const std::string& arg, const EntryContext& c) const override {
    if (arg.empty()) throw UsageError("--algos grid needs its shape: grid:PRxPC, e.g. grid:4x2");
    topology::GridShape shape;
    try {
      shape = topology::parse_grid_shape(arg);
    } catch (const std::invalid_argument& err) {
      throw UsageError("--algos " + label + ": " + err.what());
    }
    if (c.workers != 0 && shape.procs() != c.workers) {
      throw UsageError("--algos " + label + " needs " + std::to_string(shape.procs()) +
                       " processes, --workers is " + std::to_string(c.workers));
    }
    EntryLaunch l;
    l.batch = c.batch * c.workers;  // one replica: the batch all data-parallel workers take together
    l.steps_per_epoch = data_parallel_steps(c.train_samples, 1, l.batch);
    l.flags = {"--grid", shape.name()};
    return l;
  }

  std::unique_ptr<Replica> load(const RunOptions& o, const Placement& where) const override {
    return load_trained(o, where, whole_model(o), trainer_options(o.train).sampler);
  }
  void check_model(const RunOptions& o, size_t members, const trainer::Model& model) const override {
    check_grid(o, grid_, members, model);
  }
  size_t steps_per_epoch(const RunOptions&, size_t samples, size_t, size_t batch) const override {
    return data_parallel_steps(samples, 1, batch);
  }
  bool accepts_joins() const override { return false; }
  StateLayout state_layout(const RunOptions&, const Placement& where, const Replica& r) const override {
    return grid_state_layout(topology::parse_grid_shape(grid_), where, r.trained()->trainer());
  }
  bool one_replica() const override { return true; }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override {
    return make_grid_worker(c, topology::parse_grid_shape(grid_), tags());
  }

 private:
  std::string grid_;  // --grid PRxPC
};

}  // namespace

std::unique_ptr<Mode> make_grid_mode() { return std::make_unique<GridMode>(); }

}  // namespace gossipd::daemon
