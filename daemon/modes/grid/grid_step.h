#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "daemon/modes/grid/grid_comm.h"
#include "daemon/modes/grid/grid_model.h"
#include "trainer/loss.h"
#include "trainer/optimizer.h"

namespace gossipd::daemon {

// One training step of a grid process (Gholami et al.): its grid column's
// slice of the batch, its image rows of the convolutional front (if any),
// its row block of every dense layer. Forward: the front with its halo
// rows, the feature map allgathered over the column; per dense layer a
// local GEMM, then an allgather over the column to rebuild its outputs.
// Backward: the input gradient's partial sums reduce-scattered over the
// column (each process needs only its own rows of it next: the block of the
// layer below, or its rows of the feature map), the dense weight gradients
// allreduced over the grid row, the front's over the whole grid. Afterwards
// model.grads() holds this process's part of the serial step's gradient.
class GridStep {
 public:
  GridStep(GridModel& model, GridComm& comm, float label_smoothing = 0.0f);

  // `x` is the column's slice, `batch` samples row-major, `labels` theirs;
  // `grid_batch` the whole grid's B (the loss is the mean over B). The loss
  // and correct count returned are over the slice.
  trainer::LossResult train(const float* x, std::span<const uint8_t> labels, size_t grid_batch);
  // The optimizer's step on this process's parameters (made over
  // model.segments()); LARS's norms of the row blocks summed over the column.
  void update(trainer::Optimizer& optimizer, float lr);

 private:
  void forward(const float* x, size_t batch);
  void backward(const float* x, size_t batch);
  // Our block of `batch` samples (sizes[k] floats a sample from grid row
  // k) -> the whole [batch x sum sizes] in `whole`.
  void gather(const std::vector<float>& block, std::span<const size_t> sizes, std::vector<float>& whole,
              size_t batch);
  // partial_ [batch x sum sizes], summed over the column -> our block of it in `own`.
  void reduce_scatter(std::span<const size_t> sizes, std::vector<float>& own, size_t batch);
  void sum_weight_gradients();
  // Layer l's whole outputs: gathered, or its block itself when Pr = 1.
  const std::vector<float>& whole(size_t l) const {
    return model_.shape().rows == 1 ? block_out_[l] : whole_out_[l];
  }
  // The first dense layer's input: the samples, or the whole feature map.
  const float* dense_input(const float* x) const;

  GridModel& model_;
  GridComm& comm_;
  trainer::SoftmaxCrossEntropy loss_;
  // Per layer, for the current batch: the block's outputs (after the ReLU),
  // the whole outputs (Pr > 1), the block's output gradient.
  std::vector<std::vector<float>> block_out_, whole_out_, block_grad_;
  std::vector<float> whole_feature_, feature_grad_;  // with a front (Pr > 1: gathered)
  const std::vector<float>* feature_ = nullptr;      // the front's output block
  std::vector<float> blocks_, partial_, dlogits_;    // scratch
};

}  // namespace gossipd::daemon
