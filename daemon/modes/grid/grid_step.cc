#include "daemon/modes/grid/grid_step.h"

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

// The floats a sample has in all blocks, and where block `row` starts.
struct Place {
  size_t width = 0, first = 0;
};
Place place(std::span<const size_t> sizes, size_t row) {
  return {std::accumulate(sizes.begin(), sizes.end(), size_t{0}),
          std::accumulate(sizes.begin(), sizes.begin() + static_cast<ptrdiff_t>(row), size_t{0})};
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
  sum_weight_gradients();
  return result;
}

void GridStep::update(trainer::Optimizer& optimizer, float lr) {
  const size_t whole = 2 * model_.front_segments();  // the front's squares are whole already
  optimizer.step(model_.params(), model_.grads(), lr, [&](std::span<double> squares) {
    if (model_.shape().rows == 1) return;  // so are the blocks: one block a layer
    std::vector<float> blocks(squares.begin() + static_cast<ptrdiff_t>(whole), squares.end());
    comm_.sum_column(blocks);
    std::copy(blocks.begin(), blocks.end(), squares.begin() + static_cast<ptrdiff_t>(whole));
  });
}

void GridStep::sum_weight_gradients() {
  const std::span<float> grads = model_.grads();
  const size_t front = model_.front_params();
  if (front > 0 && model_.shape().procs() > 1) comm_.allreduce_all(grads.first(front));
  if (model_.shape().cols > 1) comm_.allreduce_row(grads.subspan(front));
}

const float* GridStep::dense_input(const float* x) const {
  if (feature_ == nullptr) return x;
  return model_.shape().rows == 1 ? feature_->data() : whole_feature_.data();
}

void GridStep::forward(const float* x, size_t batch) {
  auto& layers = model_.layers();
  if (GridFront* front = model_.front()) {
    feature_ = &front->forward(x, batch, comm_);
    gather(*feature_, front->feature_counts(), whole_feature_, batch);
  }
  const float* in = dense_input(x);
  for (size_t l = 0; l < layers.size(); ++l) {
    GridDense& d = layers[l];
    block_out_[l].resize(batch * d.own_rows);
    d.layer->forward(in, block_out_[l].data(), static_cast<int>(batch));
    if (d.relu) d.relu->forward(block_out_[l].data(), block_out_[l].data(), static_cast<int>(batch));
    gather(block_out_[l], d.rows, whole_out_[l], batch);
    in = whole(l).data();
  }
}

void GridStep::gather(const std::vector<float>& block, std::span<const size_t> sizes,
                      std::vector<float>& whole, size_t batch) {
  if (model_.shape().rows == 1) return;  // the block is the whole
  const auto [width, first] = place(sizes, model_.coord().row);
  whole.resize(batch * width);
  blocks_.resize(batch * width);
  std::copy(block.begin(), block.end(), blocks_.begin() + static_cast<ptrdiff_t>(batch * first));
  const std::vector<size_t> counts = times(sizes, batch);
  comm_.allgather_column(std::span<float>(blocks_).first(batch * width), counts);
  relayout(blocks_.data(), whole.data(), batch, sizes, Into::kWhole);
}

void GridStep::backward(const float* x, size_t batch) {
  auto& layers = model_.layers();
  // The last layer's block of d(loss)/d(logits): our columns of it.
  GridDense& last = layers.back();
  block_grad_.back().resize(batch * last.own_rows);
  for (size_t s = 0; s < batch; ++s)
    std::copy_n(dlogits_.data() + s * last.out + last.first_row, last.own_rows,
                block_grad_.back().data() + s * last.own_rows);
  GridFront* front = model_.front();
  for (size_t l = layers.size(); l-- > 0;) {
    GridDense& d = layers[l];
    std::vector<float>& dy = block_grad_[l];
    if (d.relu)
      d.relu->backward(nullptr, block_out_[l].data(), dy.data(), dy.data(), static_cast<int>(batch));
    // The network's first layer's input gradient is never needed.
    const bool input_grad = l > 0 || front != nullptr;
    partial_.resize(input_grad ? batch * d.in : 0);
    d.layer->backward(l == 0 ? dense_input(x) : whole(l - 1).data(), block_out_[l].data(), dy.data(),
                      input_grad ? partial_.data() : nullptr, static_cast<int>(batch));
    if (l > 0) reduce_scatter(layers[l - 1].rows, block_grad_[l - 1], batch);
  }
  if (front) {
    reduce_scatter(front->feature_counts(), feature_grad_, batch);
    front->backward(feature_grad_, batch, comm_);
  }
}

// A partial input gradient [b x in], summed over the column; the layer below
// keeps its own rows of it as its output gradient.
void GridStep::reduce_scatter(std::span<const size_t> sizes, std::vector<float>& own, size_t batch) {
  if (model_.shape().rows == 1) {
    own.swap(partial_);  // the partial sum is the whole
    return;
  }
  const auto [width, first] = place(sizes, model_.coord().row);
  own.resize(batch * sizes[model_.coord().row]);
  blocks_.resize(batch * width);
  relayout(blocks_.data(), partial_.data(), batch, sizes, Into::kBlocks);
  const std::vector<size_t> counts = times(sizes, batch);
  comm_.reduce_scatter_column(std::span<float>(blocks_).first(batch * width), counts);
  const auto from = blocks_.begin() + static_cast<ptrdiff_t>(batch * first);
  std::copy(from, from + static_cast<ptrdiff_t>(own.size()), own.begin());
}

}  // namespace gossipd::daemon
