// The sparse networks: the RadiX-Net generator's shape, and the serial
// inference against a plain per-sample reference written from the
// challenge's rule.
#include "daemon/modes/sparse/net/sparse_infer.h"

#include <gtest/gtest.h>

#include <bitset>
#include <vector>

#include "daemon/modes/sparse/net/radix_net.h"
#include "tests/support/sparse_nets.h"

namespace gossipd::trainer::sparse {
namespace {

using gossipd::testing::random_inputs;
using gossipd::testing::random_net;
using gossipd::testing::reference;

TEST(RadixNet, EveryNeuronHas32InputsAnd32Outputs) {
  for (uint32_t n : {32u, 64u, 1024u, 4096u}) {
    const SparseNet net = make_radix_net(n, 4);
    ASSERT_EQ(net.layers.size(), 4u);
    for (const SparseLayer& l : net.layers) {
      std::vector<uint32_t> out_degree(n, 0);
      for (uint32_t j = 0; j < n; ++j) {
        ASSERT_EQ(l.offsets[j + 1] - l.offsets[j], kRadixFanIn) << "N " << n << " neuron " << j;
        for (uint32_t e = l.offsets[j]; e < l.offsets[j + 1]; ++e) {
          if (e > l.offsets[j]) {
            ASSERT_LT(l.sources[e - 1], l.sources[e]);  // ascending, no repeats
          }
          ++out_degree[l.sources[e]];
          EXPECT_EQ(l.weights[e], kRadixWeight);
        }
      }
      for (uint32_t d : out_degree) ASSERT_EQ(d, kRadixFanIn);
      EXPECT_EQ(l.bias[0], challenge_bias(n));
    }
  }
  EXPECT_EQ(challenge_bias(1024), -0.30f);
  EXPECT_EQ(challenge_bias(4096), -0.35f);
  EXPECT_EQ(challenge_bias(16384), -0.40f);
  EXPECT_EQ(challenge_bias(65536), -0.45f);
}

// Which inputs of layer 0 reach each neuron after `layers` layers.
std::vector<std::bitset<4096>> reach(const SparseNet& net, size_t layers) {
  std::vector<std::bitset<4096>> r(net.neurons);
  for (uint32_t i = 0; i < net.neurons; ++i) r[i].set(i);
  for (size_t k = 0; k < layers; ++k) {
    const SparseLayer& l = net.layers[k];
    std::vector<std::bitset<4096>> next(net.neurons);
    for (uint32_t j = 0; j < net.neurons; ++j)
      for (uint32_t e = l.offsets[j]; e < l.offsets[j + 1]; ++e) next[j] |= r[l.sources[e]];
    r = std::move(next);
  }
  return r;
}

TEST(RadixNet, EveryInputReachesEveryOutputAfterCeilOfBitsOverFiveLayers) {
  const SparseNet net = make_radix_net(4096, 3);  // 12 bits: 3 layers
  const auto two = reach(net, 2);
  const auto three = reach(net, 3);
  EXPECT_EQ(two[0].count(), 1024u);  // two windows of 5 bits
  for (uint32_t j = 0; j < net.neurons; ++j) ASSERT_TRUE(three[j].all()) << "neuron " << j;
}

TEST(RadixNet, RefusesWidthsThatAreNotAPowerOfTwoFrom32) {
  EXPECT_THROW(make_radix_net(1000, 1), std::invalid_argument);
  EXPECT_THROW(make_radix_net(16, 1), std::invalid_argument);
  EXPECT_THROW(make_radix_net(0, 1), std::invalid_argument);
}

TEST(SparseInfer, MatchesTheChallengesRuleSampleBySampleBitForBit) {
  SparseNet net = random_net(48, 6, -0.5f, 7);
  // Positive biases in the last layer: the rule adds them only where Y·W
  // is nonzero.
  for (uint32_t j = 0; j < net.neurons; j += 2) net.layers.back().bias[j] = 0.25f;
  const SparseInputs in = random_inputs(48, 77, 8);  // blocks with padding lanes
  size_t died = 0;
  std::vector<std::vector<float>> want;
  for (size_t s = 0; s < in.count(); ++s) {
    want.push_back(reference(net, in, s));
    died += *std::max_element(want.back().begin(), want.back().end()) == 0.0f;
  }
  // Samples die at different layers, so blocks shrink: the test's point.
  ASSERT_GT(died, 10u);
  ASSERT_LT(died, in.count() - 10);
  for (size_t block : {16u, 32u, 0u}) {
    const InferResult r = infer(net, in, {.block = block, .keep_activations = true});
    ASSERT_EQ(r.categories.size(), in.count() - died) << "block " << block;
    for (size_t k = 0; k < r.categories.size(); ++k) {
      std::vector<float> got(net.neurons, 0.0f);
      for (uint32_t e = r.activations.offsets[k]; e < r.activations.offsets[k + 1]; ++e)
        got[r.activations.index[e]] = r.activations.value[e];
      ASSERT_EQ(got, want[r.categories[k]]) << "block " << block << " sample " << r.categories[k];
    }
  }
}

TEST(SparseInfer, OnARadixNetGivesTheRulesCategories) {
  const SparseNet net = make_radix_net(64, 12);
  const SparseInputs in = random_inputs(64, 40, 3);
  std::vector<uint32_t> want;
  for (size_t s = 0; s < in.count(); ++s) {
    const std::vector<float> y = reference(net, in, s);
    if (*std::max_element(y.begin(), y.end()) > 0.0f) want.push_back(static_cast<uint32_t>(s));
  }
  EXPECT_EQ(infer(net, in).categories, want);
  EXPECT_THROW(infer(net, random_inputs(32, 1, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace gossipd::trainer::sparse
