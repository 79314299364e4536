#include "daemon/grid/grid_step.h"

#include <algorithm>
#include <numeric>

namespace gossipd::daemon {
namespace {

// The collectives' layout, blocks [b x rows_k] one after the other, and the
// layers', one row-major [b x sum rows] matrix: copies one into the other.
enum class Into { kWhole, kBlocks };
void relayout(float* blocks, float* whole, size_t batch, std::span<const size_t> rows, Into into) {
  const size_t width = std::accumulate(rows.begin(), rows.end(), size_t{0});
  size_t first = 0;
  for (const size_t n : rows) {
    for (size_t s = 0; s < batch; ++s) {
      float* block_row = blocks + s * n;
      float* whole_row = whole + s * width + first;
      into == Into::kWhole ? std::copy_n(block_row, n, whole_row) : std::copy_n(whole_row, n, block_row);
    }
    blocks += batch * n;
    first += n;
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
  trainer::LossResult result = loss_.compute(whole(model_.layers().size() - 1).data(), labels, dlogits_);
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
    if (d.relu) d.relu->forward(block_out_[l].data(), block_out_[l].data(), static_cast<int>(batch));
    gather(l, batch);
    in = whole(l).data();
  }
}

void GridStep::gather(size_t l, size_t batch) {
  if (model_.shape().rows == 1) return;  // the block is the whole
  const GridDense& d = model_.layers()[l];
  whole_out_[l].resize(batch * d.out);
  blocks_.resize(batch * d.out);
  std::copy(block_out_[l].begin(), block_out_[l].end(),
            blocks_.begin() + static_cast<ptrdiff_t>(batch * d.first_row));
  const std::vector<size_t> counts = times(d.rows, batch);
  comm_.allgather_column(std::span<float>(blocks_).first(batch * d.out), counts);
  relayout(blocks_.data(), whole_out_[l].data(), batch, d.rows, Into::kWhole);
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
    if (d.relu)
      d.relu->backward(nullptr, block_out_[l].data(), dy.data(), dy.data(), static_cast<int>(batch));
    // The first layer's input gradient is never needed.
    const float* in = l == 0 ? x : whole(l - 1).data();
    partial_.resize(l == 0 ? 0 : batch * d.in);
    d.layer->backward(in, block_out_[l].data(), dy.data(), l == 0 ? nullptr : partial_.data(),
                      static_cast<int>(batch));
    if (l > 0) scatter_input_grad(l, batch);
  }
}

// Layer l's partial input gradient [b x in], summed over the column; layer
// l - 1 keeps its own rows of it as its output gradient.
void GridStep::scatter_input_grad(size_t l, size_t batch) {
  const GridDense& below = model_.layers()[l - 1];
  std::vector<float>& dy = block_grad_[l - 1];
  if (model_.shape().rows == 1) {
    dy.swap(partial_);  // the partial sum is the whole
    return;
  }
  dy.resize(batch * below.own_rows);
  blocks_.resize(batch * below.out);
  relayout(blocks_.data(), partial_.data(), batch, below.rows, Into::kBlocks);
  const std::vector<size_t> counts = times(below.rows, batch);
  comm_.reduce_scatter_column(std::span<float>(blocks_).first(batch * below.out), counts);
  const auto own = blocks_.begin() + static_cast<ptrdiff_t>(batch * below.first_row);
  std::copy(own, own + static_cast<ptrdiff_t>(dy.size()), dy.begin());
}

}  // namespace gossipd::daemon
