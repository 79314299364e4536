// The compressed ring allreduce (--compress for AllReduce-SGD) on both data
// paths, ranks as threads: every rank ends with the same bits, near the
// exact sum, in fewer bytes, and the residual makes repeated calls unbiased.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/compressed.h"
#include "protocol/collectives/ring.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol {
namespace compressed_allreduce_test {

using testing::on_path;
using testing::small_pieces;
using testing::TestCluster;

// Not integers: a codec's rounding shows.
std::vector<float> smooth_input(size_t rank, size_t count) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = std::sin(0.37f * static_cast<float>(i) + static_cast<float>(rank));
  return v;
}

std::vector<float> exact_sum(size_t ranks, size_t count) {
  std::vector<float> s(count, 0.0f);
  for (size_t r = 0; r < ranks; ++r) {
    const auto v = smooth_input(r, count);
    for (size_t i = 0; i < count; ++i) s[i] += v[i];
  }
  return s;
}

float max_error(const std::vector<float>& a, const std::vector<float>& b) {
  float e = 0;
  for (size_t i = 0; i < a.size(); ++i) e = std::max(e, std::abs(a[i] - b[i]));
  return e;
}

// How far one call may land from the exact sum of n inputs in [-1, 1]: each
// of the n - 1 hops and the owner's encoding round once, by at most half a
// step of the codec at the partial sum's size (at most n).
float tolerance(const CodecSpec& spec, size_t n) {
  const float hops = static_cast<float>(n);
  switch (spec.codec) {
    case Codec::kFp16:
      return hops * static_cast<float>(n) * 0x1p-11f;
    case Codec::kBf16:
      return hops * static_cast<float>(n) * 0x1p-8f;
    default:  // int8: half a step of max|x| / 127
      return hops * static_cast<float>(n) / 254.0f;
  }
}

using Param = std::tuple<DataPath, Codec, size_t>;

class CompressedAllreduceTest : public ::testing::TestWithParam<Param> {};

TEST_P(CompressedAllreduceTest, EveryRankEndsWithTheSameBitsNearTheSum) {
  const auto [path, codec, n] = GetParam();
  const CodecSpec spec{codec, 64};
  constexpr size_t kCount = 5003;  // blocks and int8 blocks of unequal sizes, several pieces
  TestCluster cluster(n, on_path(path));
  std::vector<std::vector<float>> out(n);
  testing::expect_no_errors(cluster.run([&, spec = spec](size_t r) {
    Group g(cluster.node(r), 9, cluster.ids(), small_pieces());
    ErrorFeedback feedback(spec);
    out[r] = smooth_input(r, kCount);
    CompressedAllreduce(g, out[r], feedback).run();
  }));
  for (size_t r = 1; r < n; ++r) ASSERT_EQ(out[r], out[0]) << "rank " << r << " differs from rank 0";
  EXPECT_LE(max_error(out[0], exact_sum(n, kCount)), tolerance(spec, n));
}

INSTANTIATE_TEST_SUITE_P(Codecs, CompressedAllreduceTest,
                         ::testing::Combine(::testing::Values(DataPath::kTcp, DataPath::kZmq),
                                            ::testing::Values(Codec::kFp16, Codec::kBf16, Codec::kInt8),
                                            ::testing::Values(size_t{2}, size_t{3}, size_t{5})));

// The v-variants in a codec, blocks of unequal sizes (one empty): after the
// reduce-scatter rank r's block is near the sum; after the allgather every
// rank holds every rank's block, the same bits everywhere, near its input.
TEST(CompressedRingVariants, ReduceScatterAndAllgatherWithCounts) {
  constexpr size_t n = 4;
  const std::vector<size_t> counts{1000, 0, 2500, 777};
  const size_t total = 4277;
  TestCluster cluster(n);
  std::vector<std::vector<float>> scattered(n), gathered(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 9, cluster.ids(), small_pieces());
    ErrorFeedback rs({Codec::kInt8, 64}), ag({Codec::kFp16});
    scattered[r] = smooth_input(r, total);
    CompressedRing(CompressedRing::Kind::kReduceScatter, g, scattered[r], rs, counts).run();
    gathered[r] = smooth_input(r, total);
    CompressedRing(CompressedRing::Kind::kAllgather, g, gathered[r], ag, counts).run();
  }));
  const auto sum = exact_sum(n, total);
  size_t begin = 0;
  for (size_t r = 0; r < n; ++r) {
    const auto mine = smooth_input(r, total);
    for (size_t i = begin; i < begin + counts[r]; ++i) {
      ASSERT_NEAR(scattered[r][i], sum[i], tolerance({Codec::kInt8, 64}, n)) << "rank " << r << " at " << i;
      ASSERT_NEAR(gathered[0][i], mine[i], 1e-3) << "block " << r << " at " << i;
    }
    begin += counts[r];
    ASSERT_EQ(gathered[r], gathered[0]) << "rank " << r;
  }
}

// The bytes a rank puts on the wire, against the float32 ring's on the same
// group: the codec's share of 4 bytes a value (int8: 1 + 4 / 64 per value).
TEST(CompressedAllreduceBytes, AFractionOfTheFloatRingsBytes) {
  constexpr size_t n = 4, kCount = 40000;
  TestCluster cluster(n);
  std::vector<double> ratio_fp16(n), ratio_int8(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 9, cluster.ids(), small_pieces());
    Node& node = cluster.node(r);
    const auto sent_by = [&](auto&& call) {
      const uint64_t before = node.payload_bytes_sent();
      std::vector<float> v = smooth_input(r, kCount);
      call(v);
      return static_cast<double>(node.payload_bytes_sent() - before);
    };
    const double f32 = sent_by([&](std::vector<float>& v) { AllreduceRing(g, v).run(); });
    ErrorFeedback fp16({Codec::kFp16}), int8({Codec::kInt8, 64});
    ratio_fp16[r] = sent_by([&](std::vector<float>& v) { CompressedAllreduce(g, v, fp16).run(); }) / f32;
    ratio_int8[r] = sent_by([&](std::vector<float>& v) { CompressedAllreduce(g, v, int8).run(); }) / f32;
  }));
  for (size_t r = 0; r < n; ++r) {
    EXPECT_NEAR(ratio_fp16[r], 0.5, 0.001) << "rank " << r;
    EXPECT_NEAR(ratio_int8[r], (1.0 + 4.0 / 64) / 4, 0.001) << "rank " << r;
  }
}

// Error feedback: the same inputs summed over and over, the mean of the
// results converges to the exact sum (each call's rounding is paid back by
// the next), far closer than one call comes.
TEST(CompressedAllreduceFeedback, RepeatedCallsAverageToTheExactSum) {
  constexpr size_t n = 3, kCount = 2000, kCalls = 40;
  TestCluster cluster(n);
  std::vector<float> one_call, mean(kCount, 0.0f);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), 9, cluster.ids(), small_pieces());
    ErrorFeedback feedback({Codec::kInt8, 64});
    for (size_t c = 0; c < kCalls; ++c) {
      std::vector<float> v = smooth_input(r, kCount);
      CompressedAllreduce(g, v, feedback).run();
      if (r != 0) continue;
      if (c == 0) one_call = v;
      for (size_t i = 0; i < kCount; ++i) mean[i] += v[i] / static_cast<float>(kCalls);
    }
  }));
  const auto exact = exact_sum(n, kCount);
  const float single = max_error(one_call, exact);
  ASSERT_GT(single, 0.0f) << "int8 rounds these inputs";
  EXPECT_LT(max_error(mean, exact), single / 5);
}

// A piece in a codec the group did not agree to is counted and dropped; the
// one in the agreed codec that follows is taken.
TEST(CompressedAllreduceWire, APieceInAnotherCodecIsCountedAndDropped) {
  for (DataPath path : {DataPath::kTcp, DataPath::kZmq}) {
    TestCluster cluster(2, on_path(path));
    const CodecSpec agreed{Codec::kInt8, 64};
    const std::vector<float> x = smooth_input(0, 300);
    uint64_t rejected = 0;
    std::vector<float> got(x.size());
    testing::expect_no_errors(cluster.run([&](size_t r) {
      Group g(cluster.node(r), 9, cluster.ids(), small_pieces());
      CollectiveChannel channel(g, "test");
      if (r == 1) {
        ErrorFeedback wrong({Codec::kFp16}), right(agreed);
        channel.send(0, 0, 0, wrong.encode(0, x));
        channel.send(0, 0, 0, right.encode(0, x));
        return;
      }
      const uint64_t before = cluster.node(0).counters().get(RejectReason::kCodec);
      const Message m = channel.recv(1, 0, 0, agreed, x.size());
      rejected = cluster.node(0).counters().get(RejectReason::kCodec) - before;
      ASSERT_TRUE(decode(agreed, m.bytes(), got));
    }));
    EXPECT_EQ(rejected, 1u) << (path == DataPath::kTcp ? "direct path" : "ZeroMQ");
    EXPECT_LE(max_error(got, x), 1.0f / 254 + 1e-6f);
  }
}

TEST(CompressedAllreduceWire, CountsComeBackFromTheBytesAlone) {
  for (const CodecSpec spec :
       {CodecSpec{Codec::kFp16}, CodecSpec{Codec::kInt8, 64}, CodecSpec{Codec::kInt8, 16}}) {
    for (size_t count : {0, 1, 15, 16, 17, 64, 65, 1000}) {
      EXPECT_EQ(decoded_count(spec, encoded_bytes(spec, count)), count) << spec_name(spec) << " " << count;
    }
  }
  EXPECT_FALSE(decoded_count({Codec::kFp16}, 3));
  EXPECT_FALSE(decoded_count({Codec::kInt8, 64}, 4));   // a scale and no values
  EXPECT_FALSE(decoded_count({Codec::kInt8, 64}, 70));  // 68 is a whole block; 70 is not
}

}  // namespace compressed_allreduce_test
}  // namespace gossipd::protocol
