#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "daemon/grid/grid_comm.h"
#include "daemon/grid/grid_model.h"
#include "trainer/loss.h"

namespace gossipd::daemon {

// One training step of a grid process (Gholami et al.): its grid column's
// slice of the batch, its row block of every dense layer. Forward: local
// GEMM, allgather over the column to rebuild the layer's outputs. Backward:
// the input gradient's partial sums reduce-scattered over the column (each
// process needs only its own rows of it next), the weight gradients
// allreduced over the grid row. Afterwards model.grads() holds this block
// of the serial step's gradient, for the optimizer.
class GridStep {
 public:
  GridStep(GridModel& model, GridComm& comm, float label_smoothing = 0.0f);

  // `x` is the column's slice, `batch` samples row-major, `labels` theirs;
  // `grid_batch` the whole grid's B (the loss is the mean over B). The loss
  // and correct count returned are over the slice.
  trainer::LossResult train(const float* x, std::span<const uint8_t> labels, size_t grid_batch);

 private:
  void forward(const float* x, size_t batch);
  void backward(const float* x, size_t batch);
  void gather(size_t l, size_t batch);              // block outputs -> whole outputs
  void scatter_input_grad(size_t l, size_t batch);  // partial input gradient -> layer l-1's block
  // Layer l's whole outputs: gathered, or its block itself when Pr = 1.
  const std::vector<float>& whole(size_t l) const {
    return model_.shape().rows == 1 ? block_out_[l] : whole_out_[l];
  }

  GridModel& model_;
  GridComm& comm_;
  trainer::SoftmaxCrossEntropy loss_;
  // Per layer, for the current batch: the block's outputs (after the ReLU),
  // the whole outputs (Pr > 1), the block's output gradient.
  std::vector<std::vector<float>> block_out_, whole_out_, block_grad_;
  std::vector<float> blocks_, partial_, dlogits_;  // scratch
};

}  // namespace gossipd::daemon
