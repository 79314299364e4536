#pragma once

#include "trainer/layer.h"

namespace gossipd::trainer {

class ReLU : public Layer {
 public:
  explicit ReLU(Shape shape) : shape_(shape) {}
  std::string kind() const override { return "relu"; }
  Shape output_shape() const override { return shape_; }
  void forward(const float* in, float* out, int batch) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int batch) override;

 private:
  Shape shape_;
};

// NHWC activations are already flat per sample: Flatten only changes the shape.
class Flatten : public Layer {
 public:
  explicit Flatten(Shape in) : size_(static_cast<int>(in.size())) {}
  std::string kind() const override { return "flatten"; }
  Shape output_shape() const override { return Shape{1, 1, size_}; }
  void forward(const float* in, float* out, int batch) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int batch) override;

 private:
  int size_;
};

}  // namespace gossipd::trainer
