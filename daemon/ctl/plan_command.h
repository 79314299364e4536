#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/plan/link_model.h"
#include "trainer/model.h"

namespace CLI {
class App;
}

namespace gossipd::daemon {

// gossipctl plan grid: every Pr x Pc shape of --procs processes for a model
// and batch, priced (daemon/plan/grid_plan.h).
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

// What every plan subcommand reads: the model by name and widths, and the
// link; both throw UsageError prefixed with `what` ("plan grid").
std::unique_ptr<trainer::Model> plan_model(const std::string& what, const std::string& name,
                                           const std::vector<int>& hidden);
LinkModel plan_link(const std::string& what, const std::string& bandwidth, double latency_us);

// Adds `plan` with its `grid` subcommand; returns the `grid` command.
CLI::App* add_plan_command(CLI::App& app, PlanGridOptions& o);

// Prints the table (or --json); throws UsageError when no shape can hold
// the model.
int run_plan_grid(const PlanGridOptions& o);

}  // namespace gossipd::daemon
