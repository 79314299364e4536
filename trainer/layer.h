#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "trainer/rng.h"

namespace gossipd::trainer {

// Per-sample activation shape, NHWC without N (a dense vector is 1 x 1 x C).
struct Shape {
  int height = 1;
  int width = 1;
  int channels = 1;
  size_t size() const { return static_cast<size_t>(height) * width * channels; }
  bool operator==(const Shape&) const = default;
};

// One cblas_sgemm call a training step makes: C[m x n] = A[m x k] * B[k x n].
struct GemmShape {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  double flops() const { return 2.0 * m * n * k; }
};

// A layer of a sequential network. Activations are row-major [batch, size].
// Parameters and their gradients are views into the model's two contiguous
// buffers (bound once by the model); a layer never owns parameter memory.
class Layer {
 public:
  virtual ~Layer() = default;

  virtual std::string kind() const = 0;
  virtual Shape output_shape() const = 0;
  virtual size_t param_count() const { return 0; }
  // Binds the layer's parameter and gradient views (param_count() floats each).
  virtual void bind(std::span<float> params, std::span<float> grads) {
    (void)params;
    (void)grads;
  }
  virtual void init_params(Rng& rng) { (void)rng; }

  virtual void forward(const float* in, float* out, int batch) = 0;
  // Writes the parameter gradients for this batch (adds them to what the
  // gradient buffer holds, under set_accumulate(true)) and, when `din` is
  // not null, the gradient with respect to the input.
  virtual void backward(const float* in, const float* out, const float* dout, float* din, int batch) = 0;
  // backward() in two halves a pipeline may run apart (the zb schedule):
  // the input's gradient first, the parameters' later, from the same `in`
  // and `dout`. A layer that cannot split them (splits_backward() false)
  // does all of backward() in backward_input() and nothing in
  // backward_weights(). Either way every float is what backward() makes.
  virtual bool splits_backward() const { return false; }
  virtual void backward_input(const float* in, const float* out, const float* dout, float* din, int batch) {
    backward(in, out, dout, din, batch);
  }
  virtual void backward_weights(const float* in, const float* dout, int batch) {
    (void)in;
    (void)dout;
    (void)batch;
  }
  // A pipeline stage sums micro-batches' gradients in place: the GEMM adds
  // (beta 1) instead of a second pass over the parameters per micro-batch.
  void set_accumulate(bool on) { accumulate_ = on; }

  // The GEMMs forward + backward run for `batch` (for the trainer benchmark).
  virtual void append_gemms(int batch, bool input_grad, std::vector<GemmShape>& out) const {
    (void)batch;
    (void)input_grad;
    (void)out;
  }

 protected:
  bool accumulate_ = false;
};

}  // namespace gossipd::trainer
