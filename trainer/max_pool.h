#pragma once

#include <cstdint>
#include <vector>

#include "trainer/layer.h"

namespace gossipd::trainer {

// Max pooling over size x size windows with stride = size, NHWC. backward()
// takes where the maxima are from the forward pass when it is given that
// pass's input buffer (or null), and finds them in its input again otherwise, so the
// passes of several batches (a pipeline stage's micro-batches) may
// interleave.
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
  // One sample's windows: each maximum into `out` (may be null) and its
  // index in the sample's input into `argmax` (the first of equal maxima).
  void pool(const float* img, float* out, uint32_t* argmax) const;

  std::vector<uint32_t> argmax_;      // the last forward's, per output element of its batch
  const float* argmax_in_ = nullptr;  // that forward's input and batch
  int argmax_batch_ = 0;
  std::vector<uint32_t> found_;      // one sample's, found again in backward
  mutable std::vector<float> best_;  // one window's maxima by channel, scratch
};

}  // namespace gossipd::trainer
