#pragma once

#include <cstdint>
#include <vector>

#include "trainer/layer.h"

namespace gossipd::trainer {

// Max pooling over size x size windows with stride = size, NHWC.
class MaxPool2D : public Layer {
 public:
  MaxPool2D(Shape in, int size);
  std::string kind() const override { return "maxpool"; }
  Shape output_shape() const override { return out_; }
  void forward(const float* in, float* out, int batch) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int batch) override;
  int size() const { return size_; }  // the window's side, also its stride

 private:
  Shape in_, out_;
  int size_;
  std::vector<uint32_t> argmax_;  // per output element: index into the sample's input
};

}  // namespace gossipd::trainer
