#include "topology/exponential_graph.h"

#include <gtest/gtest.h>

namespace gossipd::topology {
namespace {

TEST(ExponentialGraph, HopLengthsCycleThroughPowersOfTwo) {
  EXPECT_EQ(exponential_hops(1), 0u);
  EXPECT_EQ(exponential_hops(2), 1u);  // ⌊log2 1⌋ + 1
  EXPECT_EQ(exponential_hops(3), 2u);
  EXPECT_EQ(exponential_hops(5), 3u);
  EXPECT_EQ(exponential_hops(8), 3u);  // ⌊log2 7⌋ + 1
  EXPECT_EQ(exponential_hops(9), 4u);
  const size_t n = 8;
  const std::vector<size_t> expected{1, 2, 4, 1, 2, 4};
  for (uint64_t r = 0; r < expected.size(); ++r) {
    EXPECT_EQ(exponential_out_peers(n, 3, r), std::vector<size_t>{(3 + expected[r]) % n}) << "round " << r;
  }
}

TEST(ExponentialGraph, InPeersMirrorOutPeersAndDegreesBalance) {
  for (size_t n : {2, 3, 5, 8, 13}) {
    for (size_t peers : {1, 2}) {
      for (uint64_t r = 0; r < 6; ++r) {
        std::vector<int> in_degree(n);
        for (size_t i = 0; i < n; ++i) {
          for (size_t to : exponential_out_peers(n, i, r, peers)) {
            EXPECT_NE(to, i);
            in_degree[to]++;
            auto in = exponential_in_peers(n, to, r, peers);
            EXPECT_NE(std::find(in.begin(), in.end(), i), in.end()) << n << " " << r;
          }
        }
        const int k = static_cast<int>(std::min(peers, exponential_hops(n)));
        for (int d : in_degree) EXPECT_EQ(d, k);
      }
    }
  }
  EXPECT_TRUE(exponential_out_peers(1, 0, 0).empty());
  EXPECT_EQ(exponential_out_peers(2, 1, 7), std::vector<size_t>{0});
}

}  // namespace
}  // namespace gossipd::topology
