#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/ctl/mode_tools.h"
#include "daemon/ctl/plan_command.h"

namespace CLI {
class App;
}

namespace gossipd::daemon {

// gossipctl plan grid: every Pr x Pc shape of --procs processes for a model
// and batch, priced (daemon/modes/grid/grid_plan.h).
struct PlanGridOptions {
  std::string model = "mlp";
  std::vector<int> hidden;  // empty: the model's default widths
  size_t batch = 64;        // the grid's batch (one replica)
  size_t procs = 4;
  // Defaults: this machine's loopback, from gossipctl bench pingpong
  // (tests/bench/README.md: ~10 us for 8 KB, ~4 GB/s for 64 MB).
  std::string bandwidth = "32gbit";
  double latency_us = 10;
  double gflops = 0;  // 0: measure sgemm on the model's shapes
  std::string input_gradient = "reduce-scatter";
  bool json = false;
};

// Adds `grid` under `plan`; returns it.
CLI::App* add_plan_grid(CLI::App& plan, PlanGridOptions& o);

// Prints the table (or --json); throws UsageError when no shape can hold
// the model.
int run_plan_grid(const PlanGridOptions& o);

// The grid's gossipctl commands (the tools registry, daemon/modes/tools.cc).
std::unique_ptr<ModeTools> make_grid_tools();

}  // namespace gossipd::daemon
