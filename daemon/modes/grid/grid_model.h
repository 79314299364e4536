#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/modes/grid/grid_front.h"
#include "daemon/modes/grid/grid_shape.h"
#include "daemon/plan/plan_layers.h"
#include "trainer/dense.h"
#include "trainer/elementwise.h"

namespace gossipd::daemon {

// One dense layer as a grid process holds it: the rows of its block of W
// (and of b), which is itself a Dense(in, own rows): forward gives this
// block of the outputs, backward this block's gradients and a partial sum
// of the input gradient. The trainer needs nothing else to own a row block.
struct GridDense {
  size_t in = 0, out = 0;    // the whole layer
  std::vector<size_t> rows;  // rows of each grid row's block (the even split of `out` over Pr)
  size_t first_row = 0;      // of this process's block
  size_t own_rows = 0;
  std::unique_ptr<trainer::ReLU> relu;  // the ReLU that follows, on the block (null: none)
  size_t serial_offset = 0;             // of W in the serial model's parameters (b follows W)
  size_t offset = 0;                    // of this block's W in ours (its b follows)
  std::unique_ptr<trainer::Dense> layer;
};

// A grid process's share of one model replica: the convolutional front on
// its image rows (GridFront; its parameters whole), then its row block of
// every dense layer, in one contiguous parameter buffer and one of
// gradients: [front | dense blocks], so each part's allreduce is one call.
// Layers after the first dense one are dense layers or ReLUs.
class GridModel {
 public:
  // Throws std::invalid_argument with refusal()'s reason.
  GridModel(const std::vector<PlanLayer>& layers, topology::GridShape shape, topology::GridCoord coord);

  // Why these layers cannot be a grid model (a front GridFront refuses, a
  // layer other than dense or a ReLU after the first dense), or nullopt.
  static std::optional<std::string> refusal(const std::vector<PlanLayer>& layers);

  // This process's blocks of the serial model's parameters: a grid run
  // starts where a serial run with the same seed does.
  void load(std::span<const float> serial_params);
  // This process's blocks into the serial layout (other blocks untouched).
  void store(std::span<float> serial_params) const { store_row(coord_.row, params_, serial_params); }
  // The blocks of grid row `row` (laid out as that row's params()) into the
  // serial layout: a column's cells hold every row, so together they hold
  // the whole model.
  void store_row(size_t row, std::span<const float> blocks, std::span<float> serial_params) const;
  // How many parameters a cell of grid row `row` holds.
  size_t row_params(size_t row) const;
  // The serial model's segments (one per layer with parameters) as this
  // process holds them: the front's first, whole, then the dense layers'
  // row blocks (parts of segments the rest of the column holds the rest of).
  std::vector<trainer::ParamSegment> segments() const;
  size_t front_segments() const;

  std::span<float> params() { return params_; }
  std::span<float> grads() { return grads_; }
  // The convolutional front (null for a dense network) and how many of
  // params() are its (the first ones).
  GridFront* front() { return front_.get(); }
  size_t front_params() const { return front_ ? front_->param_count() : 0; }
  std::vector<GridDense>& layers() { return layers_; }
  topology::GridShape shape() const { return shape_; }
  topology::GridCoord coord() const { return coord_; }
  size_t classes() const { return layers_.back().out; }

 private:
  topology::GridShape shape_;
  topology::GridCoord coord_;
  std::unique_ptr<GridFront> front_;
  std::vector<GridDense> layers_;
  std::vector<float> params_, grads_;
};

}  // namespace gossipd::daemon
