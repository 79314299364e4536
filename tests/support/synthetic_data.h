#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/optimizer.h"
#include "trainer/rng.h"

namespace gossipd::testing {

// Normal pixels with random labels of 10 classes: what the synchronous
// modes' exactness tests train on (the serial and the distributed run see
// the same data; what it shows does not matter). Header-only: the tests
// that use it link the trainer.
struct SyntheticData {
  std::vector<float> x;  // samples x sample_size
  std::vector<uint8_t> y;
};

inline SyntheticData synthetic_data(size_t samples, size_t sample_size, uint64_t seed = 11) {
  SyntheticData d;
  trainer::Rng rng(seed);
  d.x.resize(samples * sample_size);
  for (float& v : d.x) v = static_cast<float>(rng.normal());
  for (size_t i = 0; i < samples; ++i) d.y.push_back(static_cast<uint8_t>(rng.below(10)));
  return d;
}

// SGD with momentum and weight decay, so the exactness tests also check
// the optimizer's state is carried right.
inline trainer::OptimizerOptions momentum_sgd() {
  trainer::OptimizerOptions o;
  o.momentum = 0.9f;
  o.weight_decay = 5e-4f;
  return o;
}

// The largest |got - want| over the largest |want|: parameters "within
// 1e-5 relative" of the serial run's.
inline double max_relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(got.at(i)) - want[i]));
    scale = std::max(scale, std::abs(static_cast<double>(want[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

}  // namespace gossipd::testing
