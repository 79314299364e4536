// Gossip with compressed segments (--compress) over the real ZeroMQ loopback
// transport, ranks as threads: the replicas still reach the initial mean
// within a few of the codec's rounding steps, what goes on the wire is the
// codec's size (error feedback's own promise: codec_test.cc), and a segment in a codec the run did not agree
// to is counted and dropped; the hierarchy's groups average in the codec and stay identical.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "protocol/collectives/segment_inbox.h"
#include "protocol/gossip/crossover.h"
#include "protocol/gossip/push_sum.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol::compressed {
namespace {

using testing::TestCluster;

const SegmentTable kSegments{{0, 300}, {300, 500}, {800, 200}};
constexpr size_t kFloats = 1000;

std::vector<float> start_of(size_t rank) {
  std::mt19937 gen(static_cast<unsigned>(rank * 31 + 3));
  std::normal_distribution<float> d(0.1f * static_cast<float>(rank), 0.05f);  // weights' scale
  std::vector<float> x(kFloats);
  for (auto& v : x) v = d(gen);
  return x;
}

enum class Kind { kCrossover, kHierarchical, kSgp, kOsgp };

std::string name(Kind k, Codec c) {
  const char* names[] = {"Crossover", "Hierarchical", "Sgp", "Osgp"};
  return std::string(names[static_cast<int>(k)]) + "_" + codec_name(c);
}

// Relative distance of every replica from the initial mean after 60 rounds;
// the bound is a few of the codec's rounding steps at these values.
double bound(Codec c) {
  switch (c) {
    case Codec::kFp16:
      return 5e-4;
    case Codec::kBf16:
      return 4e-3;
    case Codec::kInt8:
      return 6e-3;
    case Codec::kNone:
      break;
  }
  return 1e-4;
}

class CompressedAveraging : public ::testing::TestWithParam<std::tuple<Kind, Codec>> {};

TEST_P(CompressedAveraging, ReplicasReachTheInitialMeanWithinTheCodecsRounding) {
  const auto kind = std::get<0>(GetParam());
  const auto codec = std::get<1>(GetParam());
  constexpr size_t n = 4;
  TestCluster cluster(n);
  for (size_t i = 0; i < n; ++i) register_segments(cluster.node(i), kSegments);
  const topology::View view(1, cluster.ids());
  std::map<std::string, std::string> labels;
  for (size_t i = 0; i < n; ++i) labels[view.members()[i]] = "g" + std::to_string(i % 2);
  std::vector<double> mean(kFloats, 0.0);
  for (size_t r = 0; r < n; ++r) {
    const auto x = start_of(r);
    for (size_t i = 0; i < kFloats; ++i) mean[i] += x[i] / n;
  }
  GossipOptions opts;
  opts.seed = 9;
  opts.segment_deadline = std::chrono::milliseconds(10000);
  opts.codec = CodecSpec{codec, 64};
  std::vector<std::vector<float>> result(n);
  std::vector<RoundStats> stats(n);
  testing::expect_no_errors(cluster.run([&](size_t rank) {
    auto x = start_of(rank);
    Node& node = cluster.node(rank);
    if (kind == Kind::kCrossover) {
      CrossoverGossip g(node, kSegments, opts);
      for (uint64_t r = 0; r < 60; ++r) stats[rank] += g.run_round(view, r, x);
    } else if (kind == Kind::kHierarchical) {
      HierarchicalCrossover g(node, kSegments, opts);
      for (uint64_t r = 0; r < 60; ++r) stats[rank] += g.run_round(view, labels, r, x);
    } else {
      PushSumGossip g(node, kSegments, opts, 1, kind == Kind::kOsgp);
      for (uint64_t r = 1; r <= 60; ++r) stats[rank] += g.run_round(view, r, x);
      std::vector<float> z(x.size());
      g.debias(x, z);
      x = z;
    }
    result[rank] = x;
  }));
  double norm = 0;
  for (double m : mean) norm += m * m;
  for (size_t r = 0; r < n; ++r) {
    double err = 0;
    for (size_t i = 0; i < kFloats; ++i) err += (result[r][i] - mean[i]) * (result[r][i] - mean[i]);
    EXPECT_LE(std::sqrt(err / norm), bound(codec)) << name(kind, codec) << " rank " << r;
    EXPECT_EQ(stats[r].segments_skipped, 0u);
    // What went on the wire is the codec's size (envelopes aside; the
    // hierarchy's group averages are float32 collectives, counted too).
    if (kind == Kind::kHierarchical) continue;
    const size_t payload = stats[r].segments_sent > 0 ? stats[r].bytes_sent / stats[r].segments_sent : 0;
    EXPECT_LT(payload, encoded_bytes(opts.codec, 500) + 200) << "bytes per segment sent";
  }
}

INSTANTIATE_TEST_SUITE_P(Protocols, CompressedAveraging,
                         ::testing::Combine(::testing::Values(Kind::kCrossover, Kind::kHierarchical,
                                                              Kind::kSgp, Kind::kOsgp),
                                            ::testing::Values(Codec::kFp16, Codec::kBf16, Codec::kInt8)),
                         [](const auto& p) { return name(std::get<0>(p.param), std::get<1>(p.param)); });

// A member that agreed to int8 gets a segment in fp16 (a peer started with
// another --compress): counted as a codec reject, nothing handed out, and a
// segment in the agreed codec from the same peer still arrives.
TEST(CompressedSegments, ACodecTheRunDidNotAgreeToIsCountedAndDropped) {
  TestCluster cluster(2);
  for (size_t i = 0; i < 2; ++i) register_segments(cluster.node(i), kSegments);
  Node& receiver = cluster.node(0);
  Node& sender = cluster.node(1);
  const CodecSpec agreed{Codec::kInt8, 64};
  const auto x = start_of(1);
  const auto seg = std::span<const float>(x).subspan(kSegments[1].offset, kSegments[1].length);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  const auto tag = CrossoverGossip::kTag;
  {
    SegmentInbox out(sender, tag, 3, false);
    ErrorFeedback wrong({Codec::kFp16}), right(agreed);
    ASSERT_GT(out.send(receiver.id(), 1, wrong.encode(0, seg), std::nullopt, std::chrono::seconds(1)), 0u);
    ASSERT_GT(out.send(receiver.id(), 2, right.encode(0, std::span(x).first(200)), std::nullopt,
                       std::chrono::seconds(1)),
              0u);
  }
  SegmentInbox in(receiver, tag, 3, true, agreed);
  const uint64_t before = receiver.counters().get(RejectReason::kCodec);
  EXPECT_FALSE(in.receive(sender.id(), 1, kSegments[1].length, deadline, {}));
  EXPECT_EQ(receiver.counters().get(RejectReason::kCodec), before + 1);
  auto ok = in.receive(sender.id(), 2, 200, deadline, {});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->envelope.dtype(), proto::DTYPE_FLOAT32) << "handed out decoded";
  ASSERT_EQ(ok->payload.at(0).size(), 200 * sizeof(float));
  float first;
  std::memcpy(&first, ok->payload.at(0).data(), sizeof first);
  EXPECT_NEAR(first, x[0], 0.01);
}

// Hierarchical Crossover in int8 with a local step between rounds (each
// member moves its replica its own way, as training does): the members of a
// group end every round with the same bits, and the group averages travel
// in the codec too, the round's bytes near int8's share of float32's (the
// groups' very first average is float32).
TEST(CompressedHierarchical, GroupsStayIdenticalAndTheirAveragesTravelInTheCodec) {
  constexpr size_t n = 4, kRounds = 20;
  const auto run = [&](CodecSpec codec, std::vector<std::vector<std::vector<float>>>& after) {
    TestCluster cluster(n);  // its own: a node's finished rounds and collectives stay finished
    for (size_t i = 0; i < n; ++i) register_segments(cluster.node(i), kSegments);
    const topology::View view(1, cluster.ids());
    std::map<std::string, std::string> labels;
    for (size_t i = 0; i < n; ++i) labels[view.members()[i]] = "g" + std::to_string(i % 2);
    GossipOptions opts;
    opts.seed = 9;
    opts.segment_deadline = std::chrono::milliseconds(10000);
    opts.codec = codec;
    after.assign(kRounds, std::vector<std::vector<float>>(n));
    std::vector<uint64_t> bytes(n);
    testing::expect_no_errors(cluster.run([&](size_t rank) {
      auto x = start_of(rank);
      std::mt19937 gen(static_cast<unsigned>(rank + 100));
      std::normal_distribution<float> step(0.0f, 0.01f);
      HierarchicalCrossover g(cluster.node(rank), kSegments, opts);
      for (uint64_t r = 0; r < kRounds; ++r) {
        for (float& v : x) v += step(gen);  // a local step
        bytes[rank] += g.run_round(view, labels, r, x).bytes_sent;
        after[r][rank] = x;
      }
    }));
    return bytes;
  };
  std::vector<std::vector<std::vector<float>>> f32_after, int8_after;
  const auto f32 = run({}, f32_after);
  const auto int8 = run({Codec::kInt8, 64}, int8_after);
  for (size_t r = 0; r < kRounds; ++r) {
    for (size_t i = 0; i + 2 < n; ++i)  // i and i + 2: the same group
      ASSERT_EQ(int8_after[r][i], int8_after[r][i + 2])
          << "round " << r << ", members " << i << " and " << i + 2;
  }
  for (size_t rank = 0; rank < n; ++rank) {
    const double ratio = static_cast<double>(int8[rank]) / static_cast<double>(f32[rank]);
    EXPECT_LT(ratio, 0.30) << "rank " << rank << ": " << int8[rank] << " bytes against " << f32[rank];
    double err = 0, norm = 0;  // and near float32's replicas
    for (size_t i = 0; i < kFloats; ++i) {
      const double d = int8_after.back()[rank][i] - f32_after.back()[rank][i];
      err += d * d;
      norm += f32_after.back()[rank][i] * f32_after.back()[rank][i];
    }
    EXPECT_LT(std::sqrt(err / norm), 0.02) << "rank " << rank;
  }
}

}  // namespace
}  // namespace gossipd::protocol::compressed
