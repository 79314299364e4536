#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/config/run_options.h"
#include "daemon/worker/worker.h"
#include "trainer/model.h"
#include "trainer/sampler.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// Where this process stands when gossipd run sets it up.
struct Placement {
  size_t rank = 0;       // among the initial members (sorted ids)
  size_t members = 1;    // initial members
  bool joining = false;  // entering a running cluster
};

// What a checkpoint of this process holds: `name` goes in its header
// (StateHeader.layout; empty = the whole model and the trainer's optimizer
// state), and how many floats of each.
struct StateLayout {
  std::string name;
  size_t params = 0;
  size_t optimizer = 0;
};

// One value of --algo: how gossipd run sets up a process of this mode. A new
// mode is a Worker of its own plus one entry in modes(); gossipd run,
// --check-config and gossipctl compare all read the list. The defaults are
// data parallelism: every process holds the whole model and trains on its
// own shard.
struct Mode {
  std::string name;
  std::string summary;  // one line, for --help and compare's report
  // The model this process trains: the whole replica, or its shard of it.
  std::function<std::unique_ptr<trainer::Model>(const RunOptions&)> model;
  // The samples this process trains on.
  std::function<trainer::SamplerOptions(const RunOptions&, const Placement&)> sampler;
  // Steps per epoch, the same on every process of the cluster.
  std::function<size_t(const RunOptions&, size_t samples, size_t members, size_t batch)> steps_per_epoch;
  // Whether a worker may enter a running cluster (--join).
  bool accepts_joins = true;
  // What its checkpoints (--checkpoint-dir) hold: the whole replica
  // (whole_state), or a share of it the worker restores itself
  // (WorkerContext::resume_state); nullptr: the mode writes none.
  std::function<StateLayout(const RunOptions&, const Placement&, const trainer::Trainer&)> state_layout;
  std::function<std::unique_ptr<Worker>(WorkerContext&)> make_worker;
  // The mode's own checks once the members and the model are known (throws
  // UsageError); nullptr: none.
  std::function<void(const RunOptions&, size_t members, const trainer::Model&)> check = nullptr;
  // Every member holds the one model exactly (no consensus distance, no
  // gossip bytes to report): AllReduce-SGD, the grid.
  bool one_replica = false;
  // A mode whose model is not a trainer::Model (the sparse mode) runs as a
  // command of its own (daemon/cmd/run_sparse): gossipd run hands it the
  // options; the fields above but name, summary, accepts_joins and
  // one_replica are then unused.
  bool own_run = false;
};

// Every mode, in the order --help lists them.
const std::vector<Mode>& modes();
// The mode called `name`; throws UsageError naming the modes there are.
const Mode& find_mode(std::string_view name);
std::vector<std::string> mode_names();

// The data-parallel defaults, for modes to reuse.
std::unique_ptr<trainer::Model> whole_model(const RunOptions& options);
// A checkpoint holds the trainer's whole model and optimizer state.
StateLayout whole_state(const RunOptions& options, const Placement& where, const trainer::Trainer& trainer);
// The initial members split the data into shards; a joiner samples the whole
// set, with a stream of its own.
trainer::SamplerOptions shard_per_member(const RunOptions& options, const Placement& where);
// Every member makes the same number of steps: the data over the members, in batches.
size_t data_parallel_steps(size_t samples, size_t members, size_t batch);
size_t data_parallel_epoch(const RunOptions& options, size_t samples, size_t members, size_t batch);

}  // namespace gossipd::daemon
