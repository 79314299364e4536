#include "daemon/grid/grid_step.h"

#include <algorithm>

namespace gossipd::daemon {
namespace {

// Blocks of columns [b x rows_k], one after the other, <-> one [b x sum rows] matrix.
void blocks_to_rows(const float* blocks, float* whole, size_t batch, std::span<const size_t> rows) {
  const size_t width = [&] {
    size_t w = 0;
    for (size_t r : rows) w += r;
    return w;
  }();
  size_t first = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    for (size_t s = 0; s < batch; ++s) std::copy_n(blocks + s * rows[k], rows[k], whole + s * width + first);
    blocks += batch * rows[k];
    first += rows[k];
  }
}

void rows_to_blocks(const float* whole, float* blocks, size_t batch, std::span<const size_t> rows) {
  const size_t width = [&] {
    size_t w = 0;
    for (size_t r : rows) w += r;
    return w;
  }();
  size_t first = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    for (size_t s = 0; s < batch; ++s) std::copy_n(whole + s * width + first, rows[k], blocks + s * rows[k]);
    blocks += batch * rows[k];
    first += rows[k];
  }
}

std::vector<size_t> times(std::span<const size_t> rows, size_t batch) {
  std::vector<size_t> counts;
  for (size_t r : rows) counts.push_back(r * batch);
  return counts;
}

}  // namespace

GridStep::GridStep(GridModel& model, GridComm& comm, float label_smoothing)
    : model_(model),
      comm_(comm),
      loss_(static_cast<int>(model.classes()), label_smoothing),
      block_out_(model.layers().size()),
      whole_out_(model.layers().size()),
      block_grad_(model.layers().size()) {}

trainer::LossResult GridStep::train(const float* x, std::span<const uint8_t> labels, size_t grid_batch) {
  const size_t batch = labels.size();
  forward(x, batch);
  dlogits_.resize(batch * model_.classes());
  trainer::LossResult result = loss_.compute(whole_out_.back().data(), labels, dlogits_);
  // compute() took the mean over the slice; the step's loss is the mean over B.
  const float scale = static_cast<float>(batch) / static_cast<float>(grid_batch);
  for (float& g : dlogits_) g *= scale;
  backward(x, batch);
  if (model_.shape().cols > 1) comm_.allreduce_row(model_.grads());
  return result;
}

void GridStep::forward(const float* x, size_t batch) {
  auto& layers = model_.layers();
  const float* in = x;
  for (size_t l = 0; l < layers.size(); ++l) {
    GridDense& d = layers[l];
    block_out_[l].resize(batch * d.own_rows);
    d.layer->forward(in, block_out_[l].data(), static_cast<int>(batch));
    if (d.relu) {
      for (float& v : block_out_[l]) v = std::max(v, 0.0f);
    }
    gather(l, batch);
    in = whole_out_[l].data();
  }
}

void GridStep::gather(size_t l, size_t batch) {
  const GridDense& d = model_.layers()[l];
  whole_out_[l].resize(batch * d.out);
  if (model_.shape().rows == 1) {
    whole_out_[l] = block_out_[l];
    return;
  }
  blocks_.resize(batch * d.out);
  std::copy(block_out_[l].begin(), block_out_[l].end(),
            blocks_.begin() + static_cast<ptrdiff_t>(batch * d.first_row));
  const std::vector<size_t> counts = times(d.rows, batch);
  comm_.allgather_column(std::span<float>(blocks_).first(batch * d.out), counts);
  blocks_to_rows(blocks_.data(), whole_out_[l].data(), batch, d.rows);
}

void GridStep::backward(const float* x, size_t batch) {
  auto& layers = model_.layers();
  // The last layer's block of d(loss)/d(logits): our columns of it.
  GridDense& last = layers.back();
  block_grad_.back().resize(batch * last.own_rows);
  for (size_t s = 0; s < batch; ++s)
    std::copy_n(dlogits_.data() + s * last.out + last.first_row, last.own_rows,
                block_grad_.back().data() + s * last.own_rows);
  for (size_t l = layers.size(); l-- > 0;) {
    GridDense& d = layers[l];
    std::vector<float>& dy = block_grad_[l];
    if (d.relu) {
      for (size_t i = 0; i < dy.size(); ++i) dy[i] = block_out_[l][i] > 0.0f ? dy[i] : 0.0f;
    }
    const float* in = l == 0 ? x : whole_out_[l - 1].data();
    if (l == 0) {
      d.layer->backward(in, block_out_[l].data(), dy.data(), nullptr, static_cast<int>(batch));
      continue;
    }
    partial_.resize(batch * d.in);
    d.layer->backward(in, block_out_[l].data(), dy.data(), partial_.data(), static_cast<int>(batch));
    scatter_input_grad(l, batch);
  }
}

// Layer l's partial input gradient [b x in], summed over the column; layer
// l - 1 keeps its own rows of it as its output gradient.
void GridStep::scatter_input_grad(size_t l, size_t batch) {
  const GridDense& below = model_.layers()[l - 1];
  std::vector<float>& dy = block_grad_[l - 1];
  dy.resize(batch * below.own_rows);
  if (model_.shape().rows == 1) {
    dy = partial_;
    return;
  }
  blocks_.resize(batch * below.out);
  rows_to_blocks(partial_.data(), blocks_.data(), batch, below.rows);
  const std::vector<size_t> counts = times(below.rows, batch);
  comm_.reduce_scatter_column(std::span<float>(blocks_).first(batch * below.out), counts);
  const auto own = blocks_.begin() + static_cast<ptrdiff_t>(batch * below.first_row);
  std::copy(own, own + static_cast<ptrdiff_t>(dy.size()), dy.begin());
}

}  // namespace gossipd::daemon
