#include "daemon/modes/grid/grid_plan.h"

#include <cmath>
#include <stdexcept>

#include "protocol/collectives/collectives.h"
#include "topology/split.h"

namespace gossipd::daemon {
namespace {

using Kind = PlanLayer::Kind;
using topology::GridShape;

// Sums over the whole grid (floats and messages all processes send);
// divided by P at the end.
struct Totals {
  GridWords words;
  double messages = 0;
};

// Batch slices: column c takes block c of the batch.
std::vector<size_t> column_batches(size_t batch, size_t cols) {
  std::vector<size_t> b;
  for (size_t c = 0; c < cols; ++c) b.push_back(topology::block_range(batch, cols, c).size());
  return b;
}

// An allgather or reduce-scatter over each column of `per_sample` floats a
// sample: every block goes to the Pr - 1 others (ring and butterfly alike).
void column_pass(Totals& t, double& words, GridShape shape, size_t per_sample, size_t batch) {
  if (shape.rows <= 1 || per_sample == 0) return;
  words += static_cast<double>(shape.rows - 1) * static_cast<double>(per_sample * batch);
  t.messages += static_cast<double>(shape.procs() * (shape.rows - 1));
}

// An Allreduce of `count` floats over one group of `size`.
void allreduce(Totals& t, double& words, size_t size, size_t count) {
  if (size <= 1 || count == 0) return;
  words += static_cast<double>(size) * protocol::allreduce_words_per_rank(count, size);
  t.messages += static_cast<double>(size * 2 * (size - 1));
}

void dense_layer(Totals& t, const PlanLayer& l, bool input_split, GridShape shape, const GridPlanInput& in) {
  const size_t d_in = l.in.size(), d_out = l.out.size();
  if (input_split) column_pass(t, t.words.forward, shape, d_in, in.batch);  // gather the feature map
  column_pass(t, t.words.forward, shape, d_out, in.batch);
  if (!l.input_grad || shape.rows == 1) return;
  if (in.input_gradient == InputGradient::kReduceScatter) {
    column_pass(t, t.words.input_gradient, shape, d_in, in.batch);
    return;
  }
  for (size_t b : column_batches(in.batch, shape.cols))
    allreduce(t, t.words.input_gradient, shape.rows, d_in * b);
}

// Halo rows to the neighbours above and below: forward the input's, backward
// the gradient of those same rows (computed by the process below or above
// and sent back to their owner).
void conv_layer(Totals& t, const PlanLayer& l, GridShape shape, size_t batch) {
  if (shape.rows == 1 || l.kernel / 2 == 0) return;  // one block, or a 1x1 kernel: no halo
  const double rows = static_cast<double>(2 * (shape.rows - 1) * static_cast<size_t>(l.kernel / 2));
  const double words = rows * static_cast<double>(l.in.width * l.in.channels) * static_cast<double>(batch);
  const double passes = l.input_grad ? 2 : 1;
  t.words.halo += passes * words;
  t.messages += passes * static_cast<double>(2 * (shape.rows - 1) * shape.cols);
}

// The weight gradients, fused: dense rows allreduced over the Pc processes
// of each grid row, conv weights over all P.
void weight_gradients(Totals& t, const GridPlanInput& in, GridShape shape) {
  size_t conv = 0;
  std::vector<size_t> dense_rows(shape.rows, 0);
  for (const PlanLayer& l : in.layers) {
    if (l.kind == Kind::kConv) conv += l.params;
    if (l.kind != Kind::kDense) continue;
    const size_t per_row = l.params / l.out.size();  // weights of one output and its bias
    for (size_t r = 0; r < shape.rows; ++r)
      dense_rows[r] += topology::block_range(l.out.size(), shape.rows, r).size() * per_row;
  }
  for (size_t rows : dense_rows) allreduce(t, t.words.weight_gradient, shape.cols, rows);
  if (shape.cols > 1 && dense_rows.front() > 0) {  // the row's barriers before and after (GroupGridComm)
    const double rounds = std::ceil(std::log2(static_cast<double>(shape.cols)));
    t.messages += static_cast<double>(shape.procs()) * 2 * rounds;
  }
  allreduce(t, t.words.weight_gradient, shape.procs(), conv);
}

// The image rows split over a column: in whole pooling units, and every
// process holds at least the k/2 rows its neighbours take as a halo.
std::optional<std::string> domain_refusal(const std::vector<PlanLayer>& layers, GridShape shape) {
  if (layers.empty() || layers.front().kind == Kind::kDense) return std::nullopt;  // no image to split
  const PlanLayer& first = layers.front();
  size_t fewest = 0;  // the fewest image rows a process holds (the first blocks are the larger)
  try {
    fewest = topology::unit_split(static_cast<size_t>(first.in.height), shape.rows,
                                  static_cast<size_t>(row_unit(layers)))
                 .back()
                 .size();
  } catch (const std::invalid_argument& e) {
    return first.name + "'s image: " + e.what() + " (a pooling window may not straddle a split)";
  }
  size_t pooled = 1;  // the pools' shrink so far
  for (const PlanLayer& l : layers) {
    if (l.kind == Kind::kPool) pooled *= static_cast<size_t>(l.kernel);
    if (l.kind != Kind::kConv) continue;
    const size_t rows = fewest / pooled, halo = static_cast<size_t>(l.kernel / 2);
    if (shape.rows > 1 && rows < halo) {
      return l.name + " takes " + std::to_string(halo) + " halo rows from each neighbour, more than the " +
             std::to_string(rows) + " image rows a process of a " + std::to_string(shape.rows) +
             "-row grid holds";
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> grid_refusal(const GridPlanInput& in, GridShape shape) {
  if (in.batch < shape.cols) {
    return "batch " + std::to_string(in.batch) + " is smaller than the " + std::to_string(shape.cols) +
           " grid columns (each column takes at least one sample)";
  }
  for (const PlanLayer& l : in.layers) {
    if (l.kind == Kind::kDense && l.out.size() < shape.rows) {
      return l.name + " has " + std::to_string(l.out.size()) + " rows, fewer than the " +
             std::to_string(shape.rows) + " grid rows";
    }
  }
  return domain_refusal(in.layers, shape);
}

GridPlan plan_grid(const GridPlanInput& in, GridShape shape, const LinkModel& link, double flops_per_s) {
  if (auto why = grid_refusal(in, shape)) throw std::invalid_argument("grid " + shape.name() + ": " + *why);
  Totals t;
  bool split = false;  // is the input of the next layer split by image rows?
  double flops = 0;
  for (const PlanLayer& l : in.layers) {
    if (l.kind == Kind::kDense) {
      dense_layer(t, l, split, shape, in);
      split = false;
      flops += 2.0 * static_cast<double>(l.in.size() * l.out.size()) * (l.input_grad ? 3 : 2);
    } else if (l.kind == Kind::kConv) {
      conv_layer(t, l, shape, in.batch);
      split = shape.rows > 1;
      const double per_pixel = 2.0 * l.kernel * l.kernel * l.in.channels * l.out.channels;
      flops += per_pixel * static_cast<double>(l.out.height * l.out.width) * (l.input_grad ? 3 : 2);
    }
  }
  weight_gradients(t, in, shape);
  GridPlan plan;
  plan.shape = shape;
  const double procs = static_cast<double>(shape.procs());
  plan.words = {t.words.forward / procs, t.words.input_gradient / procs, t.words.weight_gradient / procs,
                t.words.halo / procs};
  plan.messages = t.messages / procs;
  plan.communication_s = link.seconds(plan.messages, plan.words.total() * sizeof(float));
  plan.compute_s = flops * static_cast<double>(in.batch) / procs / flops_per_s;
  return plan;
}

}  // namespace gossipd::daemon
