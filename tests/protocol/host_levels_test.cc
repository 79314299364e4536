// The two-level allreduce (protocol/collectives/two_levels.h): the host layout it
// reads, and its sum bit for bit against the serial one on integer-valued
// inputs, hosts given explicitly (all ranks are threads on loopback here;
// the netns bench puts them on hosts of their own).
#include <gtest/gtest.h>

#include <tuple>

#include "protocol/collectives/collectives.h"
#include "protocol/collectives/two_levels.h"
#include "protocol/wire/errors.h"
#include "tests/protocol/collective_inputs.h"
#include "tests/protocol/test_cluster.h"

namespace gossipd::protocol {
namespace {

using testing::rank_input;
using testing::serial_sum;
using testing::small_pieces;
using testing::TestCluster;

constexpr uint32_t kParentTag = 13;

TEST(HostLayout, GroupsRanksByHostInTheOrderOfTheirLowestRank) {
  const std::vector<std::string> hosts{"b", "a", "b", "a", "c", "c"};
  const HostLayout layout = host_layout(hosts);
  ASSERT_EQ(layout.hosts.size(), 3u);
  EXPECT_EQ(layout.hosts[0], (std::vector<size_t>{0, 2}));
  EXPECT_EQ(layout.hosts[1], (std::vector<size_t>{1, 3}));
  EXPECT_EQ(layout.hosts[2], (std::vector<size_t>{4, 5}));
  EXPECT_EQ(layout.per_host, 2u);
  EXPECT_TRUE(two_levels_apply(layout));
}

TEST(HostLayout, TwoLevelsNeedSeveralHostsEachWithTheSameNumberOfMembersAboveOne) {
  const std::vector<std::string> one_host{"a", "a", "a"}, one_each{"a", "b", "c"}, uneven{"a", "a", "b"};
  EXPECT_FALSE(two_levels_apply(host_layout(one_host)));
  EXPECT_FALSE(two_levels_apply(host_layout(one_each)));
  EXPECT_EQ(host_layout(uneven).per_host, 0u);
  EXPECT_FALSE(two_levels_apply(host_layout(uneven)));
}

TEST(HostLayout, EveryLoopbackAddressIsOneHost) {
  TestCluster cluster(3);
  Group g(cluster.node(1), kParentTag, cluster.ids(), small_pieces());
  const std::vector<std::string> hosts = member_hosts(g);
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0], hosts[1]);
  EXPECT_EQ(hosts[1], hosts[2]);
}

// Rank 1 knows n3 by a name ("localhost"), not an address: its own layout
// puts n3 on a host of its own; the agreed one is rank 0's.
TEST(HostLayout, EveryMemberAgreesOnRankZerosLayout) {
  TestCluster cluster(4);
  const std::string n3 = cluster.node(3).endpoint();
  cluster.node(1).add_peer("n3", "tcp://localhost" + n3.substr(n3.rfind(':')));
  std::vector<HostLayout> own(4), layouts(4);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kParentTag, cluster.ids(), small_pieces());
    own[r] = host_layout(member_hosts(g));
    layouts[r] = agreed_host_layout(g);
  }));
  ASSERT_EQ(own[1].hosts.size(), 2u) << "rank 1 should see n3 elsewhere";
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(layouts[r].hosts, (std::vector<std::vector<size_t>>{{0, 1, 2, 3}})) << "rank " << r;
    EXPECT_EQ(layouts[r].per_host, 4u);
  }
}

TEST(TwoLevelCollectives, RefusesALayoutWithoutTwoLevels) {
  TestCluster cluster(3);
  Group g(cluster.node(0), kParentTag, cluster.ids(), small_pieces());
  const std::vector<std::string> uneven{"a", "a", "b"};
  EXPECT_THROW(TwoLevelCollectives(g, host_layout(uneven)), ProtocolConfigError);
}

// Two groups whose tags agree in their low 16 bits (the grid's row 0 and
// whole grid) would take the same tags for their levels; keys keep them
// apart, and both sum right, called in turn.
TEST(TwoLevelCollectives, KeysKeepTheLevelsOfTwoGroupsApart) {
  const std::vector<std::string> hosts{"a", "a", "b", "b"};
  TestCluster cluster(4);
  std::vector<std::vector<float>> first(4), second(4);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group row(cluster.node(r), kParentTag, cluster.ids(), small_pieces());
    Group all(cluster.node(r), kParentTag + (1u << 16), cluster.ids(), small_pieces());
    TwoLevelCollectives by_tag_row(row, host_layout(hosts)), by_tag_all(all, host_layout(hosts));
    EXPECT_EQ(by_tag_row.in_host().tag(), by_tag_all.in_host().tag());
    TwoLevelCollectives keyed_row(row, host_layout(hosts), 1), keyed_all(all, host_layout(hosts), 3);
    EXPECT_NE(keyed_row.in_host().tag(), keyed_all.in_host().tag());
    EXPECT_NE(keyed_row.across_hosts().tag(), keyed_all.across_hosts().tag());
    first[r] = rank_input(r, 4099, 0);
    second[r] = rank_input(r, 4099, 1);
    keyed_row.run(first[r]);
    keyed_all.run(second[r]);
  }));
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(first[r], serial_sum(4, 4099, 0)) << "rank " << r;
    EXPECT_EQ(second[r], serial_sum(4, 4099, 1)) << "rank " << r;
  }
}

// Members on one host (all loopback here): the flat schedules, the same
// floats as Allreduce, and no levels said.
TEST(HostAwareCollectives, OnOneHostSumsAsTheFlatScheduleDoes) {
  TestCluster cluster(4);
  std::vector<std::vector<float>> aware(4), flat(4);
  std::vector<std::string> said(4, "?");
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kParentTag, cluster.ids(), small_pieces());
    HostAwareCollectives sum(g);
    for (size_t call = 0; call < 2; ++call) {
      aware[r] = rank_input(r, 100003, call);
      flat[r] = aware[r];
      sum.allreduce(aware[r]);
      Allreduce(g, flat[r]).run();
    }
    said[r] = sum.levels();
  }));
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(aware[r], flat[r]) << "rank " << r;
    EXPECT_EQ(said[r], "") << "rank " << r;
  }
}

// (hosts, members per host, floats); rank r is on host r % hosts, so a
// host's members are not neighbours in the group's order.
class TwoLevelSums : public ::testing::TestWithParam<std::tuple<size_t, size_t, size_t>> {};

TEST_P(TwoLevelSums, EveryCallEqualsTheSerialSumOnEveryMember) {
  const size_t host_count = std::get<0>(GetParam()), per_host = std::get<1>(GetParam());
  const size_t count = std::get<2>(GetParam()), n = host_count * per_host;
  constexpr size_t kCalls = 3;
  std::vector<std::string> hosts;
  for (size_t r = 0; r < n; ++r) hosts.emplace_back(1, static_cast<char>('a' + r % host_count));
  TestCluster cluster(n);
  std::vector<std::vector<std::vector<float>>> out(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kParentTag, cluster.ids(), small_pieces());
    TwoLevelCollectives two(g, host_layout(hosts));
    EXPECT_EQ(two.in_host().size(), per_host);
    EXPECT_EQ(two.across_hosts().size(), host_count);
    for (size_t call = 0; call < kCalls; ++call) {
      out[r].push_back(rank_input(r, count, call));
      two.run(out[r].back());
    }
  }));
  for (size_t call = 0; call < kCalls; ++call) {
    const auto expected = serial_sum(n, count, call);
    for (size_t r = 0; r < n; ++r) ASSERT_EQ(out[r].at(call), expected) << "rank " << r << " call " << call;
  }
}

// Uneven blocks where the buffer allows (rank r's: r floats more than rank
// 0's), else none (block_range's).
std::vector<size_t> uneven_counts(size_t n, size_t count) {
  if (count < n * n) return {};
  std::vector<size_t> counts;
  size_t given = 0;
  for (size_t r = 0; r < n; ++r) given += r;
  for (size_t r = 0; r < n; ++r) counts.push_back((count - given) / n + r);
  counts.back() += count - given - (count - given) / n * n;
  return counts;
}

// The sharded update's halves: after the reduce-scatter each rank's block
// is its sum over the group; after the allgather every rank has every
// rank's block.
TEST_P(TwoLevelSums, ReduceScatterAndAllgatherEqualTheSerialBlocksOnEveryMember) {
  const size_t host_count = std::get<0>(GetParam()), per_host = std::get<1>(GetParam());
  const size_t count = std::get<2>(GetParam()), n = host_count * per_host;
  const std::vector<size_t> counts = uneven_counts(n, count);
  const std::vector<BlockRange> blocks = block_layout(count, n, counts, "test");
  std::vector<std::string> hosts;
  for (size_t r = 0; r < n; ++r) hosts.emplace_back(1, static_cast<char>('a' + r % host_count));
  TestCluster cluster(n);
  std::vector<std::vector<float>> scattered(n), gathered(n);
  testing::expect_no_errors(cluster.run([&](size_t r) {
    Group g(cluster.node(r), kParentTag, cluster.ids(), small_pieces());
    TwoLevelCollectives two(g, host_layout(hosts));
    scattered[r] = rank_input(r, count, 0);
    two.reduce_scatter(scattered[r], counts);
    gathered[r] = rank_input(r, count, 1);  // only its own block counts
    two.allgather(gathered[r], counts);
  }));
  const auto sum = serial_sum(n, count, 0);
  std::vector<float> all(count);
  for (size_t r = 0; r < n; ++r) {
    const std::vector<float> own = rank_input(r, count, 1);
    std::copy(own.begin() + blocks[r].begin, own.begin() + blocks[r].end, all.begin() + blocks[r].begin);
  }
  for (size_t r = 0; r < n; ++r) {
    for (size_t i = blocks[r].begin; i < blocks[r].end; ++i)
      ASSERT_EQ(scattered[r][i], sum[i]) << "rank " << r << " float " << i;
    ASSERT_EQ(gathered[r], all) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(HostsMembersFloats, TwoLevelSums,
                         ::testing::Values(std::make_tuple(2, 2, 1), std::make_tuple(2, 2, 100003),
                                           std::make_tuple(3, 2, 4099), std::make_tuple(2, 3, 1000000),
                                           std::make_tuple(4, 2, 65536)));

}  // namespace
}  // namespace gossipd::protocol
