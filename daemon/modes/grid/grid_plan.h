#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon/modes/grid/grid_shape.h"
#include "daemon/plan/link_model.h"
#include "daemon/plan/plan_layers.h"

namespace gossipd::daemon {

// How the grid sums a dense layer's input gradient over the Pr processes of
// a column. Each needs only its own block of it next (the rows of the layer
// below it owns, or its image rows): a reduce-scatter, half an allreduce's
// words. The allreduce is there to compare with the paper's figures.
enum class InputGradient { kReduceScatter, kAllreduce };

// Floats one process sends per training step, the mean over the grid's
// processes, by what they are for.
struct GridWords {
  double forward = 0;  // allgather over Pr of dense outputs (and of the feature map a dense layer takes)
  double input_gradient = 0;   // reduce-scatter (or allreduce) over Pr of input-gradient partial sums
  double weight_gradient = 0;  // allreduce of weight gradients: dense over the Pc of a row, conv over all P
  double halo = 0;             // image rows to the neighbours above and below, forward and backward
  double total() const { return forward + input_gradient + weight_gradient + halo; }
};

struct GridPlanInput {
  std::vector<PlanLayer> layers;
  size_t batch = 0;  // the grid's batch B: column c takes block c of it
  InputGradient input_gradient = InputGradient::kReduceScatter;
};

// One shape, priced: words from the collectives the grid mode runs (the
// same schedules, protocol/collectives/collectives.h), time from the alpha-beta model of
// ring collectives and the compute from `flops_per_s` per process.
struct GridPlan {
  topology::GridShape shape;
  GridWords words;
  double messages = 0;         // per process per step, each costing the latency
  double communication_s = 0;  // messages x latency + bytes / bandwidth
  double compute_s = 0;        // the serial step's GEMM flops / P / flops_per_s
  double step_s() const { return communication_s + compute_s; }
};

// Why the model cannot be split into `shape` at this batch, or nullopt.
std::optional<std::string> grid_refusal(const GridPlanInput& in, topology::GridShape shape);

// Throws std::invalid_argument with grid_refusal's reason.
GridPlan plan_grid(const GridPlanInput& in, topology::GridShape shape, const LinkModel& link,
                   double flops_per_s);

}  // namespace gossipd::daemon
