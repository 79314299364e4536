#pragma once

#include <vector>

#include "trainer/layer.h"

namespace gossipd::trainer {

// 2-D convolution on NHWC activations through im2col + one GEMM per batch.
// Weights [out_channels, k, k, in_channels] row-major, then bias[out_channels].
// The im2col matrix has one row per output pixel of the whole batch, so the
// GEMM is large even for small images. backward() reuses the forward's
// im2col when it is of the same input buffer (or `in` is null: the last
// forward's input), and makes it again otherwise.
class Conv2D : public Layer {
 public:
  // Zero rows above and below the input, zero columns left and right of it.
  // A slice of an image whose neighbours' rows are already in its input
  // (a grid's halo) is padded by columns only.
  struct Padding {
    int rows = 0;
    int cols = 0;
  };
  Conv2D(Shape in, int out_channels, int kernel, int stride, Padding padding);
  Conv2D(Shape in, int out_channels, int kernel, int stride, int padding)
      : Conv2D(in, out_channels, kernel, stride, Padding{padding, padding}) {}

  std::string kind() const override { return "conv2d"; }
  Shape output_shape() const override { return out_shape_; }
  size_t param_count() const override;
  void bind(std::span<float> params, std::span<float> grads) override;
  void init_params(Rng& rng) override;
  void forward(const float* in, float* out, int batch) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int batch) override;
  // The weights' half makes the im2col of `in` again when another input's
  // came since; the input's half needs none.
  bool splits_backward() const override { return true; }
  void backward_input(const float* in, const float* out, const float* dout, float* din, int batch) override;
  void backward_weights(const float* in, const float* dout, int batch) override;
  void append_gemms(int batch, bool input_grad, std::vector<GemmShape>& out) const override;
  Shape input_shape() const { return in_; }
  int kernel() const { return kernel_; }
  int stride() const { return stride_; }
  Padding padding() const { return padding_; }

 private:
  int patch() const { return kernel_ * kernel_ * in_.channels; }
  void im2col(const float* in, int batch);
  void col2im(float* din, int batch) const;

  Shape in_, out_shape_;
  int kernel_, stride_;
  Padding padding_;
  float* w_ = nullptr;
  float* b_ = nullptr;
  float* dw_ = nullptr;
  float* db_ = nullptr;
  std::vector<float> cols_;  // [batch * out pixels, patch]
  // The input and batch cols_ holds the im2col of: a backward of another
  // input (a pipeline stage's earlier micro-batch) makes it again.
  const float* cols_in_ = nullptr;
  int cols_batch_ = 0;
  std::vector<float> dcols_;  // same shape, for the input gradient
};

}  // namespace gossipd::trainer
