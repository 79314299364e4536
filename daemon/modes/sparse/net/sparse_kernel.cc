#include "daemon/modes/sparse/net/sparse_kernel.h"

#include <algorithm>

namespace gossipd::trainer::sparse {
namespace {

// Built twice, for AVX2 and for the baseline, and picked at load time: one
// binary for every x86-64, eight lanes per instruction where the CPU has
// them. The two give the same bits: no FMA contraction in ISO C++ mode, the
// same adds in the same order.
__attribute__((target_clones("avx2", "default"))) void forward_chunks(
    const uint32_t* __restrict offsets, const uint32_t* __restrict sources, const float* __restrict weights,
    const float* __restrict bias, const float* __restrict y, float* __restrict z, size_t stride, size_t lanes,
    float ymax, float* __restrict lane_max, uint32_t neurons, const uint32_t* __restrict at) {
  for (uint32_t j = 0; j < neurons; ++j) {
    const uint32_t e0 = offsets[j];
    const uint32_t e1 = offsets[j + 1];
    const float b = bias[j];
    float* __restrict zj = z + static_cast<size_t>(at ? at[j] : j) * stride;
    for (size_t l0 = 0; l0 < lanes; l0 += kLaneChunk) {
      float acc[kLaneChunk] = {};
      for (uint32_t e = e0; e < e1; ++e) {
        const float* __restrict yi = y + static_cast<size_t>(sources[e]) * stride + l0;
        const float w = weights[e];
        for (size_t t = 0; t < kLaneChunk; ++t) acc[t] += w * yi[t];
      }
      for (size_t t = 0; t < kLaneChunk; ++t) {
        const float biased = acc[t] + b * static_cast<float>(acc[t] != 0.0f);
        const float v = std::min(std::max(biased, 0.0f), ymax);
        zj[l0 + t] = v;
        lane_max[l0 + t] = std::max(lane_max[l0 + t], v);
      }
    }
  }
}

}  // namespace

void forward_block(const SparseLayer& layer, const float* y, float* z, Block b, float ymax, float* lane_max,
                   const uint32_t* at) {
  forward_chunks(layer.offsets.data(), layer.sources.data(), layer.weights.data(), layer.bias.data(), y, z,
                 b.stride, b.lanes, ymax, lane_max, layer.neurons, at);
}

}  // namespace gossipd::trainer::sparse
