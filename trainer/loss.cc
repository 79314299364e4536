#include "trainer/loss.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gossipd::trainer {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(int classes, float label_smoothing)
    : classes_(classes), smoothing_(label_smoothing) {
  if (label_smoothing < 0.0f || label_smoothing >= 1.0f) {
    throw std::invalid_argument("label smoothing must be in [0, 1)");
  }
}

LossResult SoftmaxCrossEntropy::compute(const float* logits, std::span<const uint8_t> labels,
                                        std::span<float> dlogits) const {
  LossResult r;
  const size_t batch = labels.size();
  if (batch == 0) return r;
  const float off = smoothing_ / static_cast<float>(classes_);
  const float on = 1.0f - smoothing_ + off;
  const float inv_batch = 1.0f / static_cast<float>(batch);
  std::vector<double> prob(classes_);
  for (size_t i = 0; i < batch; ++i) {
    const float* z = logits + i * classes_;
    const int label = labels[i];
    const float* top = std::max_element(z, z + classes_);
    if (top - z == label) ++r.correct;
    double sum = 0;
    for (int j = 0; j < classes_; ++j) sum += prob[j] = std::exp(static_cast<double>(z[j] - *top));
    const double log_sum = std::log(sum);
    for (int j = 0; j < classes_; ++j) {
      const double target = j == label ? on : off;
      const double log_p = static_cast<double>(z[j] - *top) - log_sum;
      if (target > 0) r.loss -= target * log_p;
      if (!dlogits.empty()) {
        dlogits[i * classes_ + j] = static_cast<float>((prob[j] / sum - target) * inv_batch);
      }
    }
  }
  r.loss /= static_cast<double>(batch);
  return r;
}

}  // namespace gossipd::trainer
