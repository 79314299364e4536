#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace gossipd::trainer {

struct LossResult {
  double loss = 0;  // mean over the batch
  int correct = 0;  // argmax(logits) == label
};

// Softmax + cross-entropy with optional label smoothing: the target is
// (1 - eps) on the true class plus eps / classes spread over all classes.
class SoftmaxCrossEntropy {
 public:
  explicit SoftmaxCrossEntropy(int classes, float label_smoothing = 0.0f);

  // Loss and correct count; writes d(mean loss)/d(logits) into `dlogits`
  // when it is not empty (size batch * classes).
  LossResult compute(const float* logits, std::span<const uint8_t> labels, std::span<float> dlogits) const;

 private:
  int classes_;
  float smoothing_;
};

}  // namespace gossipd::trainer
