#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/ctl/mode_tools.h"

namespace CLI {
class App;
}

namespace gossipd::daemon {

// gossipctl plan pipeline: a model profiled layer by layer on this machine,
// partitioned into at most --stages stages and merged where a boundary
// costs more than it saves (daemon/modes/pipeline/pipeline_plan.h); with --procs P,
// every plan of P processes ranked (daemon/modes/pipeline/pipeline_search.h).
struct PlanPipelineOptions {
  std::string model = "cnn";
  std::vector<int> hidden;  // empty: the model's default widths
  size_t stages = 2;
  size_t batch = 64;              // one pipeline's batch
  size_t micros = 0;              // 0: topology::default_micro_batches(batch)
  std::string schedule = "auto";  // the schedule the partition is chosen for (auto: 1f1b; --procs: searched)
  // Default: processes on this host through shared memory (kSharedMemory).
  std::string bandwidth = "shm";
  double latency_us = 8;
  int reps = 20;  // timed passes per layer
  bool json = false;
  // --procs P: the whole plan (K x D = P, M, schedule, partition) for a
  // global --batch, ranked; the layers profiled at every micro-batch size
  // it prices, cached in --cache-dir.
  size_t procs = 0;
  std::string cache_dir;  // where the profile is cached (default_cache_dir())
  int threads = 1;        // OpenBLAS threads, as gossipd run's default
  size_t top = 12;        // plans printed
};

// Adds `pipeline` to gossipctl's `plan` command; returns it.
CLI::App* add_plan_pipeline(CLI::App& plan, PlanPipelineOptions& o);
int run_plan_pipeline(const PlanPipelineOptions& o);

// The pipeline's gossipctl commands (the tools registry, daemon/modes/tools.cc).
std::unique_ptr<ModeTools> make_pipeline_tools();

}  // namespace gossipd::daemon
