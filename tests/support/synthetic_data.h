#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/optimizer.h"
#include "trainer/rng.h"

namespace gossipd::testing {

// Normal pixels, each labelled by the largest of ten fixed random linear
// scores: what the synchronous modes' exactness tests train on (the serial
// and the distributed run see the same data). The labels are learnable on
// purpose: a model fitting random labels is chaotic, and the rounding of
// another summation order (OpenBLAS's AVX-512 kernels differ from its AVX2
// ones) grew there from 1e-8 to 2e-2 in 100 steps. Header-only: the tests
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
  std::vector<float> w(sample_size * 10);
  for (float& v : w) v = static_cast<float>(rng.normal());
  for (size_t i = 0; i < samples; ++i) {
    std::vector<double> score(10, 0.0);
    for (size_t f = 0; f < sample_size; ++f) {
      for (size_t c = 0; c < 10; ++c) score[c] += d.x[i * sample_size + f] * w[f * 10 + c];
    }
    d.y.push_back(static_cast<uint8_t>(std::max_element(score.begin(), score.end()) - score.begin()));
  }
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

// The mean loss of the first and of the last `pass` steps (a pass over the
// set): a run trained when the second is lower.
struct PassLosses {
  double first = 0, last = 0;
};
inline PassLosses first_and_last_pass(const std::vector<double>& losses, size_t pass) {
  PassLosses p;
  const size_t n = std::min(pass, losses.size());
  for (size_t i = 0; i < n; ++i) {
    p.first += losses[i] / static_cast<double>(n);
    p.last += losses[losses.size() - n + i] / static_cast<double>(n);
  }
  return p;
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
