#pragma once

#include "trainer/layer.h"

namespace gossipd::trainer {

// Y = X * W^T + b with W stored [out, in] row-major, then b[out]. Row-wise
// weight storage is what the grid mode splits across processes later.
class Dense : public Layer {
 public:
  Dense(int in, int out);

  std::string kind() const override { return "dense"; }
  Shape output_shape() const override { return Shape{1, 1, out_}; }
  size_t param_count() const override;
  void bind(std::span<float> params, std::span<float> grads) override;
  void init_params(Rng& rng) override;
  void forward(const float* in, float* out, int batch) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int batch) override;
  bool splits_backward() const override { return true; }
  void backward_input(const float* in, const float* out, const float* dout, float* din, int batch) override;
  void backward_weights(const float* in, const float* dout, int batch) override;
  void append_gemms(int batch, bool input_grad, std::vector<GemmShape>& out) const override;

 private:
  int in_, out_;
  float* w_ = nullptr;
  float* b_ = nullptr;
  float* dw_ = nullptr;
  float* db_ = nullptr;
};

}  // namespace gossipd::trainer
