#include "daemon/modes/sparse/net/sparse_backprop.h"

#include <algorithm>

namespace gossipd::trainer::sparse {

namespace {
size_t row_at(const uint32_t* at, uint32_t k) { return at != nullptr ? at[k] : k; }
}  // namespace

void train_forward(const SparseLayer& rows, const uint32_t* at, const float* y, float* out, Block b) {
  for (uint32_t k = 0; k < rows.neurons; ++k) {
    float* __restrict o = out + row_at(at, k) * b.stride;
    std::fill_n(o, b.lanes, rows.bias[k]);
    for (uint32_t e = rows.offsets[k]; e < rows.offsets[k + 1]; ++e) {
      const float* __restrict yi = y + size_t{rows.sources[e]} * b.stride;
      const float w = rows.weights[e];
      for (size_t t = 0; t < b.lanes; ++t) o[t] += w * yi[t];
    }
    for (size_t t = 0; t < b.lanes; ++t) o[t] = std::max(o[t], 0.0f);
  }
}

void train_backward(const SparseLayer& rows, const uint32_t* at, const float* y, const float* out, float* g,
                    Block b, float* dw, float* db, float* gprev) {
  for (uint32_t k = 0; k < rows.neurons; ++k) {
    float* __restrict d = g + row_at(at, k) * b.stride;
    const float* __restrict o = out + row_at(at, k) * b.stride;
    float sum = 0;
    for (size_t t = 0; t < b.lanes; ++t) {
      d[t] = o[t] > 0.0f ? d[t] : 0.0f;
      sum += d[t];
    }
    db[k] += sum;
    for (uint32_t e = rows.offsets[k]; e < rows.offsets[k + 1]; ++e) {
      const size_t src = size_t{rows.sources[e]} * b.stride;
      const float* __restrict yi = y + src;
      float acc = 0;
      for (size_t t = 0; t < b.lanes; ++t) acc += d[t] * yi[t];
      dw[e] += acc;
      if (gprev == nullptr) continue;
      float* __restrict gi = gprev + src;
      const float w = rows.weights[e];
      for (size_t t = 0; t < b.lanes; ++t) gi[t] += w * d[t];
    }
  }
}

void head_forward(const HeadShare& h, const float* y, Block b, float* logits) {
  const size_t n = h.neurons.size();
  for (uint32_t c = 0; c < h.classes; ++c) {
    float* __restrict l = logits + size_t{c} * b.lanes;
    for (size_t k = 0; k < n; ++k) {
      const float v = h.weights[c * n + k];
      const float* __restrict yi = y + size_t{h.neurons[k]} * b.stride;
      for (size_t t = 0; t < b.lanes; ++t) l[t] += v * yi[t];
    }
  }
}

void head_backward(const HeadShare& h, const float* y, const float* dlogits, Block b, float* dv, float* g) {
  const size_t n = h.neurons.size();
  for (size_t k = 0; k < n; ++k) {
    const float* __restrict yi = y + size_t{h.neurons[k]} * b.stride;
    float* __restrict gi = g + size_t{h.neurons[k]} * b.stride;
    std::fill_n(gi, b.lanes, 0.0f);
    for (uint32_t c = 0; c < h.classes; ++c) {
      const float* __restrict dl = dlogits + size_t{c} * b.lanes;
      const float v = h.weights[c * n + k];
      float acc = 0;
      for (size_t t = 0; t < b.lanes; ++t) {
        acc += dl[t] * yi[t];
        gi[t] += v * dl[t];
      }
      dv[c * n + k] += acc;
    }
  }
}

std::vector<float> samples_major(std::span<const float> class_major, uint32_t classes, size_t lanes) {
  std::vector<float> out(class_major.size());
  for (uint32_t c = 0; c < classes; ++c)
    for (size_t t = 0; t < lanes; ++t) out[t * classes + c] = class_major[c * lanes + t];
  return out;
}

void to_class_major(std::span<const float> sample_major, uint32_t classes, size_t lanes,
                    std::span<float> class_major) {
  for (uint32_t c = 0; c < classes; ++c)
    for (size_t t = 0; t < lanes; ++t) class_major[c * lanes + t] = sample_major[t * classes + c];
}

}  // namespace gossipd::trainer::sparse
