#include "daemon/modes/sparse/net/radix_net.h"

#include <bit>
#include <stdexcept>
#include <string>

namespace gossipd::trainer::sparse {
namespace {

constexpr uint32_t kWindowBits = 5;  // 2^5 = kRadixFanIn

// The mask of the window of layer `l` in a `bits`-bit index.
uint32_t window_mask(uint32_t bits, uint32_t l) {
  uint32_t mask = 0;
  for (uint32_t b = 0; b < kWindowBits; ++b) mask |= 1u << ((kWindowBits * l + b) % bits);
  return mask;
}

}  // namespace

float challenge_bias(uint32_t neurons) {
  if (neurons >= 65536) return -0.45f;
  if (neurons >= 16384) return -0.40f;
  if (neurons >= 4096) return -0.35f;
  return -0.30f;
}

SparseNet make_radix_net(uint32_t neurons, uint32_t layers) {
  if (!std::has_single_bit(neurons) || neurons < kRadixFanIn || neurons > (1u << 24)) {
    throw std::invalid_argument("a RadiX-Net needs a power of two from 32 to 16777216 neurons, not " +
                                std::to_string(neurons));
  }
  const uint32_t bits = static_cast<uint32_t>(std::countr_zero(neurons));
  SparseNet net;
  net.neurons = neurons;
  net.layers.reserve(layers);
  for (uint32_t l = 0; l < layers; ++l) {
    const uint32_t mask = window_mask(bits, l);
    SparseLayer layer;
    layer.neurons = neurons;
    layer.offsets.resize(neurons + 1);
    layer.sources.reserve(static_cast<size_t>(neurons) * kRadixFanIn);
    for (uint32_t j = 0; j < neurons; ++j) {
      layer.offsets[j] = static_cast<uint32_t>(layer.sources.size());
      // Every value of the window's bits, the rest of j kept: ascending,
      // because the subsets of a mask enumerate in increasing order.
      uint32_t sub = 0;
      do {
        layer.sources.push_back((j & ~mask) | sub);
        sub = (sub - mask) & mask;
      } while (sub != 0);
    }
    layer.offsets[neurons] = static_cast<uint32_t>(layer.sources.size());
    layer.weights.assign(layer.sources.size(), kRadixWeight);
    layer.bias.assign(neurons, challenge_bias(neurons));
    net.layers.push_back(std::move(layer));
  }
  return net;
}

}  // namespace gossipd::trainer::sparse
