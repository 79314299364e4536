#include "daemon/modes/grid/grid_model.h"

#include <algorithm>
#include <stdexcept>

#include "topology/split.h"

namespace gossipd::daemon {

namespace {

bool dense(const PlanLayer& l) { return l.kind == PlanLayer::Kind::kDense; }

// The layers before the first dense one.
std::span<const PlanLayer> front_of(const std::vector<PlanLayer>& layers) {
  const auto first_dense = std::find_if(layers.begin(), layers.end(), dense);
  return {layers.begin(), first_dense};
}

}  // namespace

std::optional<std::string> GridModel::refusal(const std::vector<PlanLayer>& layers) {
  const std::span<const PlanLayer> front = front_of(layers);
  if (front.size() == layers.size()) return "the grid mode needs a model with dense layers";
  if (!front.empty()) {
    if (auto why = GridFront::refusal(front)) return why;
  }
  bool after_dense = false;
  for (const PlanLayer& l : std::span<const PlanLayer>(layers).subspan(front.size())) {
    if (after_dense && l.kind == PlanLayer::Kind::kOther && l.name == "relu") {
      after_dense = false;
      continue;
    }
    if (!dense(l)) return "the grid mode takes dense layers and ReLUs after the first dense layer: " + l.name;
    after_dense = true;
  }
  return std::nullopt;
}

GridModel::GridModel(const std::vector<PlanLayer>& layers, topology::GridShape shape,
                     topology::GridCoord coord)
    : shape_(shape), coord_(coord) {
  if (auto why = refusal(layers)) throw std::invalid_argument(*why);
  const std::span<const PlanLayer> front = front_of(layers);
  if (!front.empty()) front_ = std::make_unique<GridFront>(front, shape, coord.row);
  size_t serial = front_params(), local = front_params();
  for (const PlanLayer& l : std::span<const PlanLayer>(layers).subspan(front.size())) {
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
  if (front_)
    front_->bind(std::span<float>(params_).first(front_params()),
                 std::span<float>(grads_).first(front_params()));
  for (GridDense& d : layers_) {
    const size_t n = d.own_rows * (d.in + 1);
    d.layer = std::make_unique<trainer::Dense>(static_cast<int>(d.in), static_cast<int>(d.own_rows));
    d.layer->bind(std::span<float>(params_).subspan(d.offset, n),
                  std::span<float>(grads_).subspan(d.offset, n));
  }
}

void GridModel::load(std::span<const float> serial) {
  if (front_) front_->load(serial, params_);
  for (const GridDense& d : layers_) {
    const float* w = serial.data() + d.serial_offset + d.first_row * d.in;
    const float* b = serial.data() + d.serial_offset + d.out * d.in + d.first_row;
    std::copy(w, w + d.own_rows * d.in, params_.begin() + static_cast<ptrdiff_t>(d.offset));
    std::copy(b, b + d.own_rows, params_.begin() + static_cast<ptrdiff_t>(d.offset + d.own_rows * d.in));
  }
}

void GridModel::store_row(size_t row, std::span<const float> blocks, std::span<float> serial) const {
  if (front_) front_->store(blocks, serial);
  const float* from = blocks.data() + front_params();
  for (const GridDense& d : layers_) {
    const size_t first = topology::block_range(d.out, shape_.rows, row).begin, n = d.rows[row];
    std::copy_n(from, n * d.in, serial.data() + d.serial_offset + first * d.in);
    std::copy_n(from + n * d.in, n, serial.data() + d.serial_offset + d.out * d.in + first);
    from += n * (d.in + 1);
  }
}

size_t GridModel::row_params(size_t row) const {
  size_t n = front_params();
  for (const GridDense& d : layers_) n += d.rows[row] * (d.in + 1);
  return n;
}

std::vector<trainer::ParamSegment> GridModel::segments() const {
  std::vector<trainer::ParamSegment> all;
  if (front_) {
    for (const FrontLayer& l : front_->layers()) {
      if (l.params > 0) all.push_back({"front", l.serial_offset, l.params});
    }
  }
  for (const GridDense& d : layers_) all.push_back({"dense", d.offset, d.own_rows * (d.in + 1)});
  return all;
}

size_t GridModel::front_segments() const { return segments().size() - layers_.size(); }

}  // namespace gossipd::daemon
