#include "daemon/grid/grid_model.h"

#include <algorithm>
#include <stdexcept>

#include "topology/split.h"

namespace gossipd::daemon {

namespace {

bool relu_after_dense(const PlanLayer& l, bool after_dense) {
  return after_dense && l.kind == PlanLayer::Kind::kOther && l.name == "relu";
}

}  // namespace

std::optional<std::string> GridModel::refusal(const std::vector<PlanLayer>& layers) {
  bool after_dense = false;
  for (const PlanLayer& l : layers) {
    if (relu_after_dense(l, after_dense)) {
      after_dense = false;
      continue;
    }
    if (l.kind != PlanLayer::Kind::kDense)
      return "the grid mode splits dense networks only so far: " + l.name + " is not a dense layer";
    after_dense = true;
  }
  if (layers.empty()) return "the grid mode needs a model with dense layers";
  return std::nullopt;
}

GridModel::GridModel(const std::vector<PlanLayer>& layers, topology::GridShape shape,
                     topology::GridCoord coord)
    : shape_(shape), coord_(coord) {
  if (auto why = refusal(layers)) throw std::invalid_argument(*why);
  size_t serial = 0, local = 0;
  for (const PlanLayer& l : layers) {
    if (l.kind != PlanLayer::Kind::kDense) {  // a ReLU (refusal() lets nothing else by)
      layers_.back().relu =
          std::make_unique<trainer::ReLU>(trainer::Shape{1, 1, static_cast<int>(layers_.back().own_rows)});
      continue;
    }
    GridDense d;
    d.in = l.in.size();
    d.out = l.out.size();
    for (size_t r = 0; r < shape.rows; ++r)
      d.rows.push_back(topology::block_range(d.out, shape.rows, r).size());
    d.first_row = topology::block_range(d.out, shape.rows, coord.row).begin;
    d.own_rows = d.rows[coord.row];
    d.serial_offset = serial;
    d.offset = local;
    serial += l.params;
    local += d.own_rows * (d.in + 1);
    layers_.push_back(std::move(d));
  }
  params_.assign(local, 0.0f);
  grads_.assign(local, 0.0f);
  for (GridDense& d : layers_) {
    const size_t n = d.own_rows * (d.in + 1);
    d.layer = std::make_unique<trainer::Dense>(static_cast<int>(d.in), static_cast<int>(d.own_rows));
    d.layer->bind(std::span<float>(params_).subspan(d.offset, n),
                  std::span<float>(grads_).subspan(d.offset, n));
  }
}

void GridModel::load(std::span<const float> serial) {
  for (const GridDense& d : layers_) {
    const float* w = serial.data() + d.serial_offset + d.first_row * d.in;
    const float* b = serial.data() + d.serial_offset + d.out * d.in + d.first_row;
    std::copy(w, w + d.own_rows * d.in, params_.begin() + static_cast<ptrdiff_t>(d.offset));
    std::copy(b, b + d.own_rows, params_.begin() + static_cast<ptrdiff_t>(d.offset + d.own_rows * d.in));
  }
}

void GridModel::store_row(size_t row, std::span<const float> blocks, std::span<float> serial) const {
  const float* from = blocks.data();
  for (const GridDense& d : layers_) {
    const size_t first = topology::block_range(d.out, shape_.rows, row).begin, n = d.rows[row];
    std::copy_n(from, n * d.in, serial.data() + d.serial_offset + first * d.in);
    std::copy_n(from + n * d.in, n, serial.data() + d.serial_offset + d.out * d.in + first);
    from += n * (d.in + 1);
  }
}

size_t GridModel::row_params(size_t row) const {
  size_t n = 0;
  for (const GridDense& d : layers_) n += d.rows[row] * (d.in + 1);
  return n;
}

}  // namespace gossipd::daemon
