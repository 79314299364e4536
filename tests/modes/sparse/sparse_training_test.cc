// The sparse mode's row-parallel training (daemon/modes/sparse/row_training.h)
// over the real transport, processes as threads: after 100 steps every
// process's rows, head columns and head biases equal the serial trainer's
// within 1e-5 for every partitioner at P = 2, 3 and 4, the losses too; the
// payload bytes each product moves forward equal the planner's words, and
// the backward moves the same words back (none for the first product); a
// member that never comes stops the others within the timeout, naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "daemon/modes/sparse/row_training.h"
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

constexpr size_t kSteps = 100;
constexpr size_t kBatch = 8;

std::vector<uint8_t> labels_for(size_t count) {
  trainer::Rng rng(21);
  std::vector<uint8_t> labels(count);
  for (auto& l : labels) l = static_cast<uint8_t>(rng.below(10));
  return labels;
}

// The largest difference between a process's share and the serial model.
float largest_difference(const RowModel& got, const sp::SparseModel& want) {
  float most = 0;
  const auto compare = [&](const RowSet& s, const sp::SparseLayer& layer) {
    for (size_t k = 0; k < s.neurons.size(); ++k) {
      const uint32_t j = s.neurons[k];
      most = std::max(most, std::abs(s.rows.bias[k] - layer.bias[j]));
      for (uint32_t e = 0; e < s.rows.offsets[k + 1] - s.rows.offsets[k]; ++e)
        most = std::max(
            most, std::abs(s.rows.weights[s.rows.offsets[k] + e] - layer.weights[layer.offsets[j] + e]));
    }
  };
  for (size_t l = 0; l < got.share.products.size(); ++l) {
    compare(got.share.products[l].local, want.net.layers[l]);
    compare(got.share.products[l].remote, want.net.layers[l]);
  }
  const size_t n = got.head.neurons.size(), all = want.head.neurons.size();
  for (uint32_t c = 0; c < want.head.classes; ++c) {
    most = std::max(most, std::abs(got.head_bias[c] - want.head_bias[c]));
    for (size_t k = 0; k < n; ++k)
      most = std::max(
          most, std::abs(got.head.weights[c * n + k] - want.head.weights[c * all + got.head.neurons[k]]));
  }
  return most;
}

using Case = testing::PartitionCase;

class SparseRowTraining : public ::testing::TestWithParam<Case> {};

TEST_P(SparseRowTraining, HundredStepsGiveTheSerialParametersAndMoveThePlannedBytes) {
  const uint32_t procs = GetParam().procs;
  const NeuronPartitioner how = GetParam().how;
  const sp::SparseNet pattern = sp::shuffle_neurons(testing::random_net(40, 4, 0.0f, 7), 3);
  const sp::SparseModel start = sp::make_trainable(pattern, 10, 5);
  const sp::SparseInputs in = testing::random_inputs(40, 200, 8);
  const std::vector<uint8_t> labels = labels_for(in.count());
  const auto batch = [&](size_t s) { return sp::SparseBatch{in, labels, (s * kBatch) % 200, kBatch}; };

  // Momentum and weight decay, as gossipd run's defaults have them.
  const trainer::OptimizerOptions update{.momentum = 0.9f, .weight_decay = 5e-4f};
  sp::SparseTrainer serial(start, update);
  std::vector<double> serial_loss;
  for (size_t s = 0; s < kSteps; ++s) serial_loss.push_back(serial.step(batch(s), 0.02f).loss);

  const NeuronOwners owners = partition_neurons(pattern, procs, how, {1.1, 4});
  const SparseTraffic planned = price_partition(pattern, owners, procs);
  TestCluster cluster(procs);
  std::vector<std::unique_ptr<RowTraining>> rows(procs);
  std::vector<std::vector<double>> loss(procs);
  protocol::testing::expect_no_errors(cluster.run([&](size_t r) {
    rows[r] = std::make_unique<RowTraining>(
        cluster.node(r), cluster.ids(), share_model(start, owners, procs, static_cast<uint32_t>(r)),
        pattern.neurons, update, protocol::CollectiveOptions{}, testing::kSparseTags);
    for (size_t s = 0; s < kSteps; ++s) loss[r].push_back(rows[r]->step(batch(s), 0.02f).loss);
  }));
  for (uint32_t r = 0; r < procs; ++r) {
    ASSERT_TRUE(rows[r]) << "process " << r;
    EXPECT_LT(largest_difference(rows[r]->model(), serial.model()), 1e-5f) << "process " << r;
    for (size_t s = 0; s < kSteps; s += 9) EXPECT_NEAR(loss[r][s], serial_loss[s], 1e-5) << "step " << s;
    const RowStepBytes& bytes = rows[r]->last_bytes();
    for (size_t l = 0; l < pattern.layers.size(); ++l) {
      const uint64_t words = planned.sent[l][r] * kBatch * sizeof(float);
      EXPECT_EQ(bytes.forward[l], words) << "process " << r << " product " << l;
      // The backward sends each process the words it received forward.
      uint64_t back = 0;
      for (const auto& from : rows[r]->model().share.products[l].recv) back += from.size();
      EXPECT_EQ(bytes.backward[l], l == 0 ? 0 : back * kBatch * sizeof(float))
          << "process " << r << " product " << l;
    }
  }
  EXPECT_LT(serial_loss.back(), serial_loss.front());
}

INSTANTIATE_TEST_SUITE_P(EveryPartitioner, SparseRowTraining, testing::every_partition_case(),
                         testing::partition_case_name);

// Process 2 never starts training: the others fail by the group's timeout,
// naming it, instead of waiting for ever (a hang would be the test's own
// timeout).
TEST(SparseRowTraining, AMemberThatNeverComesStopsTheOthersNamingIt) {
  const sp::SparseNet pattern = testing::random_net(24, 3, 0.0f, 1);
  const sp::SparseModel start = sp::make_trainable(pattern, 10, 2);
  const NeuronOwners owners = partition_neurons(pattern, 3, NeuronPartitioner::kBlock, {});
  const sp::SparseInputs in = testing::random_inputs(24, 8, 2);
  const std::vector<uint8_t> labels = labels_for(in.count());
  TestCluster cluster(3);
  protocol::CollectiveOptions o;
  o.timeout = std::chrono::milliseconds(500);
  std::mutex m;
  std::vector<std::string> said;
  std::vector<std::chrono::milliseconds> timeouts;  // of the errors that were a PeerTimeout
  cluster.run(
      [&](size_t r) {
        RowTraining rows(cluster.node(r), cluster.ids(),
                         share_model(start, owners, 3, static_cast<uint32_t>(r)), pattern.neurons,
                         trainer::OptimizerOptions{}, o, testing::kSparseTags);
        try {
          rows.step({in, labels, 0, in.count()}, 0.05f);
        } catch (const protocol::TransportError& e) {
          std::lock_guard lock(m);
          said.push_back(e.what());
          if (const auto* t = dynamic_cast<const protocol::PeerTimeout*>(&e))
            timeouts.push_back(t->timeout());
        }
      },
      2);
  ASSERT_EQ(said.size(), 2u);
  for (const std::string& s : said) EXPECT_NE(s.find("'n2'"), std::string::npos) << s;
  // Each gave up by the group's own timeout (a silent member, not a lost
  // connection or another wait).
  EXPECT_EQ(timeouts, (std::vector<std::chrono::milliseconds>(2, o.timeout))) << said[0] << "\n" << said[1];
}

}  // namespace
}  // namespace gossipd::daemon
