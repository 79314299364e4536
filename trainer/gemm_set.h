#pragma once

#include <vector>

#include "trainer/layer.h"

namespace gossipd::trainer {

// The GEMMs of a training step on buffers of their own (random inputs):
// what the machine's sgemm does on exactly these shapes, for the trainer
// benchmark and the planners' compute estimate.
class GemmSet {
 public:
  explicit GemmSet(std::vector<GemmShape> shapes, uint64_t seed = 3);
  void run();  // every GEMM once
  double flops() const { return flops_; }

 private:
  struct Buffers {
    std::vector<float> a, b, c;
  };
  std::vector<GemmShape> shapes_;
  std::vector<Buffers> buffers_;
  double flops_ = 0;
};

// Floating-point operations per second sgemm reaches on `shapes`: the best
// of `trials` timed passes after one untimed.
double sgemm_flops_per_s(const std::vector<GemmShape>& shapes, int trials = 3);

}  // namespace gossipd::trainer
