// The collectives the synchronous modes build on, checked bit for bit
// against serial references on integer-valued inputs: recursive doubling,
// the uneven (v-variant) ring collectives, and
// point-to-point tensors, on the direct data path and over ZeroMQ.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <tuple>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/doubling.h"
#include "protocol/collectives/group_wire.h"
#include "protocol/collectives/ring.h"
#include "protocol/collectives/tensor_stream.h"
#include "protocol/wire/data_wire.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/message.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol {
namespace {

using testing::on_path;
using testing::rank_input;
using testing::serial_sum;
using testing::small_pieces;
using testing::TestCluster;

constexpr uint32_t kSyncTag = 9;

class DoublingTest : public ::testing::TestWithParam<std::tuple<size_t, size_t>> {};

TEST_P(DoublingTest, AllreduceEqualsSerialSumOnEveryRank) {
  const auto n = std::get<0>(GetParam());
  const auto count = std::get<1>(GetParam());
  TestCluster cluster(n);
  const auto expected = serial_sum(n, count);
  std::vector<std::vector<float>> out(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kSyncTag, cluster.ids(), small_pieces());
    out[r] = rank_input(r, count);
    AllreduceDoubling(g, out[r]).run();
    AllreduceDoubling(g, out[r]).run();  // twice: the second call on the same links
  }));
  for (size_t r = 0; r < n; ++r) {
    std::vector<float> twice(expected);
    for (float& x : twice) x *= static_cast<float>(n);
    ASSERT_EQ(out[r], twice) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(PowersOfTwo, DoublingTest,
                         ::testing::Combine(::testing::Values<size_t>(1, 2, 4, 8),
                                            ::testing::Values<size_t>(0, 1, 7, 1000, 100000)));

TEST(Doubling, RefusesAGroupThatIsNotAPowerOfTwo) {
  TestCluster cluster(3);
  Group g(cluster.node(0), kSyncTag, cluster.ids(), small_pieces());
  std::vector<float> v(10);
  EXPECT_THROW(AllreduceDoubling(g, v), ProtocolConfigError);
}

// Block r holds counts[r] elements, some of them empty.
const std::vector<size_t> kCounts{5, 0, 1000, 3};

TEST(UnevenRing, ReduceScatterThenAllgatherGiveTheSum) {
  const size_t n = kCounts.size();
  const size_t count = std::accumulate(kCounts.begin(), kCounts.end(), size_t{0});
  TestCluster cluster(n);
  const auto expected = serial_sum(n, count);
  std::vector<std::vector<float>> scattered(n), gathered(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kSyncTag, cluster.ids(), small_pieces());
    scattered[r] = rank_input(r, count);
    ReduceScatterRing(g, scattered[r], kCounts).run();
    gathered[r] = scattered[r];
    AllgatherRing(g, gathered[r], kCounts).run();
  }));
  for (size_t r = 0; r < n; ++r) {
    const size_t begin = std::accumulate(kCounts.begin(), kCounts.begin() + static_cast<long>(r), size_t{0});
    for (size_t i = begin; i < begin + kCounts[r]; ++i)
      ASSERT_EQ(scattered[r][i], expected[i]) << "rank " << r;
    ASSERT_EQ(gathered[r], expected) << "rank " << r;
  }
}

TEST(UnevenRing, CountsThatDoNotFitTheBufferAreAConfigError) {
  TestCluster cluster(2);
  Group g(cluster.node(0), kSyncTag, cluster.ids(), small_pieces());
  std::vector<float> v(10);
  const std::vector<size_t> short_counts{4, 5}, too_many{5, 5, 0};
  EXPECT_THROW(AllgatherRing(g, v, short_counts), ProtocolConfigError);
  EXPECT_THROW(ReduceScatterRing(g, v, too_many), ProtocolConfigError);
}

class TensorTest : public ::testing::TestWithParam<DataPath> {};

TEST_P(TensorTest, ReceivesByKeyWhateverTheOrderOfArrival) {
  TestCluster cluster(2, on_path(GetParam()));
  constexpr size_t kTensors = 6;
  std::vector<std::vector<float>> got(kTensors, std::vector<float>(300));
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kSyncTag, cluster.ids(), small_pieces());
    TensorStream s(g);
    if (r == 0) {
      std::vector<std::vector<float>> sent;
      for (size_t k = 0; k < kTensors; ++k) sent.push_back(rank_input(k, 300));
      std::vector<TensorStream::SendHandle> handles;
      for (size_t k = 0; k < kTensors; ++k) handles.push_back(s.send(1, 100 + k, sent[k]));
      for (auto& h : handles) s.wait(h);
      for (auto& h : handles) EXPECT_TRUE(h.done());
    } else {
      // Posted in reverse: the first ones to arrive wait for their receive.
      std::vector<TensorStream::RecvHandle> handles;
      for (size_t k = kTensors; k-- > 0;) handles.push_back(s.irecv(0, 100 + k, got[k]));
      for (auto& h : handles) s.wait(h);
    }
  }));
  for (size_t k = 0; k < kTensors; ++k) EXPECT_EQ(got[k], rank_input(k, 300)) << "tensor " << k;
}

// Rank 0 sends something that is not the tensor rank 1 waits for (`junk`,
// with the same key), then the tensor (rank_input(2, 50)); returns the
// reject counters of rank 1 once it has received the tensor itself.
const RejectCounters& after_junk(TestCluster& cluster,
                                 const std::function<void(Group&, TensorStream&)>& junk) {
  std::vector<float> got(50);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kSyncTag, cluster.ids(), small_pieces());
    TensorStream s(g);
    if (r == 0) {
      junk(g, s);
      const auto right = rank_input(2, 50);
      s.wait(s.send(1, 7, right));  // drives any frame queued before it out too
    } else {
      s.recv(0, 7, got);
    }
  }));
  EXPECT_EQ(got, rank_input(2, 50));
  return cluster.node(1).counters();
}

TEST_P(TensorTest, AWrongSizeIsCountedAndTheRightOneStillArrives) {
  TestCluster cluster(2, on_path(GetParam()));
  const auto& rejects = after_junk(cluster, [](Group&, TensorStream& s) {
    const auto wrong = rank_input(1, 49);
    s.wait(s.send(1, 7, wrong));
  });
  EXPECT_EQ(rejects.get(RejectReason::kSizeMismatch), 1u);
}

// The same bytes as the tensor expected, declared as another dtype: dropped
// and counted, never read as floats.
TEST_P(TensorTest, AnotherDtypeIsCountedAndTheFloatTensorStillArrives) {
  TestCluster cluster(2, on_path(GetParam()));
  const std::vector<uint8_t> bytes(200, 0xff);  // 50 floats' worth, every one a NaN
  const auto& rejects = after_junk(cluster, [&](Group& g, TensorStream&) {
    if (GroupWire* w = g.wire()) {
      wire::FrameHeader f;
      f.kind = wire::FrameKind::kTensor;
      f.dtype = proto::DTYPE_UINT8;
      f.seq = 7;
      f.bytes = bytes.size();
      w->send(1, f, bytes.data(), nullptr);
    } else {
      send_chunk(g.node(), g.member(1), {g.tag(), 7}, proto::DTYPE_UINT8, bytes.size(),
                 OutFrame::copy_of(bytes.data(), bytes.size()), std::chrono::seconds(5));
    }
  });
  EXPECT_EQ(rejects.get(RejectReason::kDType), 1u);
}

INSTANTIATE_TEST_SUITE_P(Paths, TensorTest, ::testing::Values(DataPath::kTcp, DataPath::kZmq),
                         [](const ::testing::TestParamInfo<DataPath>& p) {
                           return std::string(p.param == DataPath::kTcp ? "tcp" : "zmq");
                         });

}  // namespace
}  // namespace gossipd::protocol
