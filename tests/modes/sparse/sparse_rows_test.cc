// The sparse mode's row-parallel inference (daemon/modes/sparse/row_inference.h)
// over the real transport, processes as threads: the categories and final
// activations of the serial reference bit for bit for every partitioner at
// P = 2, 3 and 4; the payload bytes the transport counts per product equal
// the planner's words; a member that never comes stops the others within
// the timeout, naming it.
#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "daemon/modes/sparse/row_inference.h"
#include "daemon/modes/sparse/sparse_partition.h"
#include "daemon/modes/sparse/sparse_traffic.h"
#include "protocol/wire/errors.h"
#include "tests/modes/sparse/sparse_cases.h"
#include "tests/protocol/test_cluster.h"
#include "tests/support/sparse_nets.h"

namespace gossipd::daemon {
namespace {

namespace sp = trainer::sparse;
using protocol::testing::TestCluster;

// Every process's row-parallel inference of `in`, as threads over the transport.
std::vector<RowInferResult> run_rows(const sp::SparseNet& net, const NeuronOwners& owners, uint32_t procs,
                                     const sp::SparseInputs& in, const sp::InferOptions& o) {
  TestCluster cluster(procs);
  std::vector<RowInferResult> got(procs);
  protocol::testing::expect_no_errors(cluster.run([&](size_t r) {
    RowInference rows(cluster.node(r), cluster.ids(),
                      share_rows(net, owners, procs, static_cast<uint32_t>(r)), net.neurons, {},
                      testing::kSparseTags);
    got[r] = rows.run(in, o);
  }));
  return got;
}

TEST(SparseRows, EachProcessSendsWhatThePlannerPricesAndReceivesWhatOthersSendIt) {
  const sp::SparseNet net = sp::shuffle_neurons(testing::random_net(40, 3, -0.3f, 2), 5);
  const NeuronOwners owners = partition_neurons(net, 3, NeuronPartitioner::kRandom, {});
  const SparseTraffic t = price_partition(net, owners, 3);
  std::vector<RowShare> shares;
  for (uint32_t me = 0; me < 3; ++me) shares.push_back(share_rows(net, owners, 3, me));
  for (size_t l = 0; l < net.layers.size(); ++l) {
    size_t edges = 0;
    for (uint32_t me = 0; me < 3; ++me) {
      const RowProduct& p = shares[me].products[l];
      size_t words = 0;
      for (uint32_t to = 0; to < 3; ++to) {
        words += p.send[to].size();
        EXPECT_EQ(p.send[to], shares[to].products[l].recv[me]) << "layer " << l << " " << me << "->" << to;
      }
      EXPECT_TRUE(p.send[me].empty());
      EXPECT_EQ(words, t.sent[l][me]) << "layer " << l << " process " << me;
      edges += p.local.rows.edges() + p.remote.rows.edges();
      EXPECT_EQ(p.local.neurons.size() + p.remote.neurons.size(), p.mine.size());
      for (uint32_t j : p.local.neurons)
        for (uint32_t e = net.layers[l].offsets[j]; e < net.layers[l].offsets[j + 1]; ++e)
          EXPECT_EQ(owners[l][net.layers[l].sources[e]], me) << "a local row reads another's entry";
    }
    EXPECT_EQ(edges, net.layers[l].edges());
  }
  EXPECT_THROW(share_rows(net, owners, 2, 0), std::invalid_argument);  // an owner 2 of 2
  EXPECT_THROW(share_rows(net, owners, 3, 3), std::invalid_argument);
  NeuronOwners short_one = owners;
  short_one.pop_back();
  EXPECT_THROW(share_rows(net, short_one, 3, 0), std::invalid_argument);
}

using Case = testing::PartitionCase;

class SparseRowInference : public ::testing::TestWithParam<Case> {};

// Samples die at different layers (negative bias, weights of both signs),
// blocks of 16 with a short last one, the neurons shuffled.
TEST_P(SparseRowInference, GivesTheSerialCategoriesAndActivationsBitForBitAndMovesThePlannedBytes) {
  // Plain variables, not a structured binding: the lambda below captures
  // them, which Debian 12's clang refuses for bindings.
  const uint32_t procs = GetParam().procs;
  const NeuronPartitioner how = GetParam().how;
  sp::SparseNet net = sp::shuffle_neurons(testing::random_net(48, 6, -0.5f, 7), 3);
  for (uint32_t j = 0; j < net.neurons; j += 2) net.layers.back().bias[j] = 0.25f;
  const sp::SparseInputs in = testing::random_inputs(48, 77, 8);
  const sp::InferOptions o{.block = 16, .keep_activations = true};
  const sp::InferResult serial = sp::infer(net, in, o);
  ASSERT_GT(serial.categories.size(), 10u);
  ASSERT_LT(serial.categories.size(), in.count() - 10);

  const NeuronOwners owners = partition_neurons(net, procs, how, {1.1, 4});
  const SparseTraffic planned = price_partition(net, owners, procs);
  const std::vector<RowInferResult> got = run_rows(net, owners, procs, in, o);
  for (uint32_t r = 0; r < procs; ++r) {
    EXPECT_EQ(got[r].categories, serial.categories) << "process " << r;
    for (size_t l = 0; l < net.layers.size(); ++l)
      EXPECT_EQ(got[r].payload_bytes[l], planned.sent[l][r] * got[r].samples[l] * sizeof(float))
          << "process " << r << " layer " << l;
    // Every process dropped the same dead samples.
    EXPECT_EQ(got[r].samples.front(), in.count()) << "process " << r;
    EXPECT_EQ(got[r].samples, got[0].samples) << "process " << r;
  }
  for (size_t k = 0; k < serial.categories.size(); ++k) {
    std::map<uint32_t, float> whole;
    for (uint32_t r = 0; r < procs; ++r) {
      const sp::SparseInputs& a = got[r].activations;
      ASSERT_EQ(a.count(), serial.categories.size());
      for (uint32_t e = a.offsets[k]; e < a.offsets[k + 1]; ++e) whole[a.index[e]] = a.value[e];
    }
    std::map<uint32_t, float> want;
    for (uint32_t e = serial.activations.offsets[k]; e < serial.activations.offsets[k + 1]; ++e)
      want[serial.activations.index[e]] = serial.activations.value[e];
    ASSERT_EQ(whole, want) << "sample " << serial.categories[k];
  }
}

// Most samples die within the first layers: the processes drop the same
// ones from the later products, as the serial run does, and still give its
// categories and activations; each product's bytes follow the samples it
// carried.
TEST(SparseRowInference, DeadSamplesLeaveTheLaterProductsAndTheResultStaysTheSerials) {
  const uint32_t procs = 3;
  const sp::SparseNet net = sp::shuffle_neurons(testing::random_net(48, 16, -0.9f, 11), 3);
  const sp::SparseInputs in = testing::random_inputs(48, 96, 5);
  const sp::InferOptions o{.block = 64, .keep_activations = true};
  const sp::InferResult serial = sp::infer(net, in, o);
  const NeuronOwners owners = partition_neurons(net, procs, NeuronPartitioner::kRandom, {});
  const SparseTraffic planned = price_partition(net, owners, procs);
  const std::vector<RowInferResult> got = run_rows(net, owners, procs, in, o);
  ASSERT_LT(got[0].samples.back(), in.count() / 2) << "too few samples died to test their leaving";
  for (uint32_t r = 0; r < procs; ++r) {
    EXPECT_EQ(got[r].categories, serial.categories) << "process " << r;
    EXPECT_EQ(got[r].samples, got[0].samples) << "process " << r;
    for (size_t l = 0; l < net.layers.size(); ++l)
      EXPECT_EQ(got[r].payload_bytes[l], planned.sent[l][r] * got[r].samples[l] * sizeof(float));
  }
  size_t activations = 0;
  for (uint32_t r = 0; r < procs; ++r) activations += got[r].activations.index.size();
  EXPECT_EQ(activations, serial.activations.index.size());
}

INSTANTIATE_TEST_SUITE_P(EveryPartitioner, SparseRowInference, testing::every_partition_case(),
                         testing::partition_case_name);

// Process 2 never starts its inference: the others fail at the group's
// timeout, naming it, instead of waiting for ever (a hang would be the
// test's own timeout).
TEST(SparseRowInference, AMemberThatNeverComesStopsTheOthersNamingIt) {
  const sp::SparseNet net = testing::random_net(32, 3, -0.3f, 1);
  const NeuronOwners owners = partition_neurons(net, 3, NeuronPartitioner::kBlock, {});
  const sp::SparseInputs in = testing::random_inputs(32, 20, 2);
  TestCluster cluster(3);
  protocol::CollectiveOptions o;
  o.timeout = std::chrono::milliseconds(500);
  std::mutex m;
  std::vector<std::string> said;
  cluster.run(
      [&](size_t r) {
        RowInference rows(cluster.node(r), cluster.ids(),
                          share_rows(net, owners, 3, static_cast<uint32_t>(r)), net.neurons, o,
                          testing::kSparseTags);
        try {
          rows.run(in);
        } catch (const protocol::TransportError& e) {
          std::lock_guard lock(m);
          said.push_back(e.what());
        }
      },
      2);
  ASSERT_EQ(said.size(), 2u);
  for (const std::string& s : said) EXPECT_NE(s.find("'n2'"), std::string::npos) << s;
}

}  // namespace
}  // namespace gossipd::daemon
