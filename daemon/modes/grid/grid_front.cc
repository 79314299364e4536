#include "daemon/modes/grid/grid_front.h"

#include <algorithm>
#include <stdexcept>

#include "trainer/conv2d.h"
#include "trainer/elementwise.h"
#include "trainer/max_pool.h"

namespace gossipd::daemon {
namespace {

using Kind = PlanLayer::Kind;

bool flatten(const PlanLayer& l) { return l.kind == Kind::kOther && l.name == "flatten"; }
bool relu(const PlanLayer& l) { return l.kind == Kind::kOther && l.name == "relu"; }

trainer::Shape local(trainer::Shape whole, size_t rows) {
  return trainer::Shape{static_cast<int>(rows), whole.width, whole.channels};
}

std::unique_ptr<trainer::Layer> make_local(const PlanLayer& l, size_t rows) {
  const size_t halo = l.kind == Kind::kConv ? static_cast<size_t>(l.kernel / 2) : 0;
  const trainer::Shape in = local(l.in, rows + 2 * halo);
  if (l.kind == Kind::kConv) {  // the halo rows stand for the padding above and below
    return std::make_unique<trainer::Conv2D>(in, l.out.channels, l.kernel, 1,
                                             trainer::Conv2D::Padding{0, l.kernel / 2});
  }
  if (l.kind == Kind::kPool) return std::make_unique<trainer::MaxPool2D>(in, l.kernel);
  if (relu(l)) return std::make_unique<trainer::ReLU>(in);
  return nullptr;  // the flatten
}

// Rows [begin, end) of each of `batch` samples of `plane` floats (rows of
// `row` floats) into `to`, one after the other; `to` has `stride` floats a sample.
void copy_rows(const float* from, size_t plane, size_t begin, size_t count, size_t row, float* to,
               size_t stride, size_t batch) {
  for (size_t s = 0; s < batch; ++s)
    std::copy_n(from + s * plane + begin * row, count * row, to + s * stride);
}

}  // namespace

std::optional<std::string> GridFront::refusal(std::span<const PlanLayer> layers) {
  for (size_t i = 0; i < layers.size(); ++i) {
    const PlanLayer& l = layers[i];
    if (flatten(l) && i + 1 == layers.size()) continue;
    if (l.kind == Kind::kConv || l.kind == Kind::kPool || relu(l)) continue;
    return "the grid mode splits convolutions, max pools and ReLUs by image rows, then a flatten, then dense "
           "layers: " +
           l.name + " does not fit there";
  }
  return std::nullopt;
}

GridFront::GridFront(std::span<const PlanLayer> layers, topology::GridShape shape, size_t grid_row)
    : row_(grid_row), grid_rows_(shape.rows) {
  if (auto why = refusal(layers)) throw std::invalid_argument(*why);
  const trainer::Shape image = layers.front().in;
  image_floats_ = image.size();
  std::vector<topology::BlockRange> rows =
      topology::unit_split(static_cast<size_t>(image.height), shape.rows,
                           static_cast<size_t>(row_unit({layers.begin(), layers.end()})));
  for (const PlanLayer& l : layers) {
    FrontLayer f;
    f.kind = l.kind;
    f.rows = rows;
    f.row_floats = static_cast<size_t>(l.in.width * l.in.channels);
    f.halo = l.kind == Kind::kConv ? static_cast<size_t>(l.kernel / 2) : 0;
    f.input_grad = l.input_grad;
    f.serial_offset = params_;
    f.params = l.params;
    for (const topology::BlockRange& r : rows) {
      if (shape.rows > 1 && r.size() < f.halo) {  // the planner refuses such shapes (grid_refusal)
        throw std::invalid_argument(l.name + " takes " + std::to_string(f.halo) +
                                    " halo rows from each neighbour, more than the " +
                                    std::to_string(r.size()) + " image rows a process holds");
      }
    }
    f.layer = make_local(l, rows[row_].size());
    params_ += l.params;
    if (l.kind == Kind::kPool) {
      for (topology::BlockRange& r : rows) r = {r.begin / l.kernel, r.end / l.kernel};
    }
    const trainer::Shape out = flatten(l) ? l.in : l.out;
    feature_.clear();
    for (const topology::BlockRange& r : rows) feature_.push_back(r.size() * out.width * out.channels);
    layers_.push_back(std::move(f));
  }
  acts_.resize(layers_.size() + 1);
}

void GridFront::bind(std::span<float> params, std::span<float> grads) {
  for (FrontLayer& l : layers_) {
    if (l.params == 0) continue;
    l.layer->bind(params.subspan(l.serial_offset, l.params), grads.subspan(l.serial_offset, l.params));
  }
}

// The front is the serial network's first layers: its parameters are the
// serial buffer's first param_count() floats, in the same layout.
void GridFront::load(std::span<const float> serial, std::span<float> params) const {
  std::copy_n(serial.begin(), params_, params.begin());
}

void GridFront::store(std::span<const float> params, std::span<float> serial) const {
  std::copy_n(params.begin(), params_, serial.begin());
}

const std::vector<float>& GridFront::forward(const float* x, size_t batch, GridComm& comm) {
  const FrontLayer& first = layers_.front();
  const topology::BlockRange r = first.rows[row_];
  const size_t plane = r.size() * first.row_floats;
  acts_[0].resize(batch * plane);
  copy_rows(x, image_floats_, r.begin, r.size(), first.row_floats, acts_[0].data(), plane, batch);
  for (size_t i = 0; i < layers_.size(); ++i) {
    FrontLayer& l = layers_[i];
    if (!l.layer) {  // the flatten: the same floats
      acts_[i + 1] = acts_[i];
      continue;
    }
    acts_[i + 1].resize(batch * l.layer->output_shape().size());
    if (l.kind == Kind::kConv) {
      conv_forward(l, acts_[i].data(), acts_[i + 1].data(), batch, comm);
    } else {
      l.layer->forward(acts_[i].data(), acts_[i + 1].data(), static_cast<int>(batch));
    }
  }
  return acts_.back();
}

// `floats` each way, none where there is no neighbour (an empty span
// tells exchange_halo so).
void GridFront::size_halos(size_t floats) {
  const bool above = row_ > 0, below = row_ + 1 < grid_rows_;
  up_.resize(above ? floats : 0);
  down_.resize(below ? floats : 0);
  from_up_.resize(up_.size());
  from_down_.resize(down_.size());
}

// Our rows between the halo rows of the neighbours (zeros beyond the image).
void GridFront::conv_forward(FrontLayer& l, const float* in, float* out, size_t batch, GridComm& comm) {
  const size_t rows = own(l), h = l.halo, rf = l.row_floats;
  const size_t plane = rows * rf, padded_plane = (rows + 2 * h) * rf, halo = h * rf;
  const bool above = row_ > 0, below = row_ + 1 < grid_rows_;
  padded_.assign(batch * padded_plane, 0.0f);
  copy_rows(in, plane, 0, rows, rf, padded_.data() + halo, padded_plane, batch);
  if (above || below) {
    size_halos(batch * halo);
    if (above) copy_rows(in, plane, 0, h, rf, up_.data(), halo, batch);
    if (below) copy_rows(in, plane, rows - h, h, rf, down_.data(), halo, batch);
    comm.exchange_halo(up_, down_, from_up_, from_down_);
    if (above) copy_rows(from_up_.data(), halo, 0, h, rf, padded_.data(), padded_plane, batch);
    if (below)
      copy_rows(from_down_.data(), halo, 0, h, rf, padded_.data() + halo + plane, padded_plane, batch);
  }
  l.layer->forward(padded_.data(), out, static_cast<int>(batch));
}

void GridFront::backward(std::span<const float> dfeature, size_t batch, GridComm& comm) {
  grad_.assign(dfeature.begin(), dfeature.end());
  for (size_t i = layers_.size(); i-- > 0;) {
    FrontLayer& l = layers_[i];
    if (!l.layer) continue;  // the flatten: the same floats
    din_.resize(l.input_grad ? acts_[i].size() : 0);
    float* to = l.input_grad ? din_.data() : nullptr;
    if (l.kind == Kind::kConv) {
      conv_backward(l, grad_.data(), to, batch, comm);
    } else {
      l.layer->backward(acts_[i].data(), acts_[i + 1].data(), grad_.data(), to, static_cast<int>(batch));
    }
    grad_.swap(din_);
  }
}

// The gradient of our padded input: its halo rows are the neighbours' rows,
// so they go back to them, and theirs of ours come here to be added.
void GridFront::conv_backward(FrontLayer& l, const float* dout, float* din, size_t batch, GridComm& comm) {
  if (din == nullptr) {
    l.layer->backward(nullptr, nullptr, dout, nullptr, static_cast<int>(batch));
    return;
  }
  const size_t rows = own(l), h = l.halo, rf = l.row_floats;
  const size_t plane = rows * rf, padded_plane = (rows + 2 * h) * rf, halo = h * rf;
  const bool above = row_ > 0, below = row_ + 1 < grid_rows_;
  padded_.resize(batch * padded_plane);
  l.layer->backward(nullptr, nullptr, dout, padded_.data(), static_cast<int>(batch));
  copy_rows(padded_.data(), padded_plane, h, rows, rf, din, plane, batch);
  if (!above && !below) return;
  size_halos(batch * halo);
  if (above) copy_rows(padded_.data(), padded_plane, 0, h, rf, up_.data(), halo, batch);
  if (below) copy_rows(padded_.data(), padded_plane, h + rows, h, rf, down_.data(), halo, batch);
  comm.exchange_halo(up_, down_, from_up_, from_down_);
  for (size_t s = 0; s < batch; ++s) {
    float* mine = din + s * plane;
    if (above) {
      const float* g = from_up_.data() + s * halo;
      for (size_t k = 0; k < halo; ++k) mine[k] += g[k];
    }
    if (below) {
      const float* g = from_down_.data() + s * halo;
      for (size_t k = 0; k < halo; ++k) mine[plane - halo + k] += g[k];
    }
  }
}

}  // namespace gossipd::daemon
