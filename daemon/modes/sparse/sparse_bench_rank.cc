#include "daemon/modes/sparse/sparse_bench_rank.h"

#include <chrono>
#include <cmath>
#include <functional>

#include "daemon/bench/collective_ops.h"
#include "daemon/modes/sparse/net/challenge_files.h"
#include "daemon/modes/sparse/net/sparse_train.h"
#include "daemon/modes/sparse/partition_file.h"
#include "daemon/modes/sparse/row_inference.h"
#include "daemon/modes/sparse/row_training.h"
#include "daemon/modes/sparse/sparse_traffic.h"
#include "protocol/collectives/barrier.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {
namespace {

namespace sp = trainer::sparse;
using Clock = std::chrono::steady_clock;

double bench_seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The bench's processes run the sparse rows alone (no mode beside them): the
// modes' block is theirs, and its first tags are the sparse ones (SparseTag).
const protocol::tags::Range kBenchTags = protocol::tags::range(protocol::tags::User::kModes);
uint32_t bench_tag() { return kBenchTags.at(kBenchTag); }

// What both kinds of run need: the members, the partition and its price.
struct RankSetup {
  std::vector<std::string> ids;
  NeuronOwners owners;
  uint32_t procs = 0;
  SparseTraffic planned;
  protocol::CollectiveOptions options;
};

RankSetup setup(protocol::Node& node, size_t rank, const std::vector<std::string>& endpoints,
                const SparseBenchOptions& o, const SparseProblem& p) {
  RankSetup s;
  for (size_t r = 0; r < endpoints.size(); ++r) {
    s.ids.push_back(rank_id(r));
    if (r != rank) node.add_peer(s.ids.back(), endpoints[r]);
  }
  s.owners = read_partition_file(o.partition_file, p.net, s.procs);
  s.planned = price_partition(p.net, s.owners, s.procs);
  s.options.timeout = std::chrono::milliseconds(o.timeout_ms);
  return s;
}

// Per repetition: `reference` on rank 0 while the others wait, then
// `parallel` everywhere (each returns whether its run was exact).
WorkerReport alternate(protocol::Node& node, size_t rank, const RankSetup& s, const SparseBenchOptions& o,
                       const std::function<bool(int)>& reference, const std::function<bool(int)>& parallel) {
  protocol::Group group(node, bench_tag(), s.ids, s.options);
  WorkerReport report;
  report.exact = true;
  for (int k = 0; k < o.warmup + o.reps; ++k) {
    auto t0 = Clock::now();
    if (rank == 0) report.exact &= reference(k);
    const double serial = bench_seconds_since(t0);
    protocol::Barrier(group).run();
    t0 = Clock::now();
    report.exact &= parallel(k);
    const double rows = bench_seconds_since(t0);
    if (k < o.warmup) continue;
    report.rep_seconds.push_back(rows);
    if (rank == 0) report.reference_seconds.push_back(serial);
  }
  protocol::Barrier(group).run();  // nobody leaves while another still reads from it
  return report;
}

WorkerReport bench_inference(protocol::Node& node, size_t rank, const RankSetup& s,
                             const SparseBenchOptions& o, const SparseProblem& p) {
  const std::vector<uint32_t> truth = sp::read_categories(o.categories_file, p.inputs.count());
  RowInference rows(node, s.ids, share_rows(p.net, s.owners, s.procs, static_cast<uint32_t>(rank)),
                    p.net.neurons, s.options, kBenchTags);
  const auto reference = [&](int) { return sp::infer(p.net, p.inputs).categories == truth; };
  const auto parallel = [&](int) {
    const RowInferResult r = rows.run(p.inputs, {.block = o.block});
    bool exact = r.categories == truth;
    for (size_t l = 0; l < p.net.layers.size(); ++l)
      exact &= r.payload_bytes[l] == s.planned.sent[l][rank] * r.samples[l] * sizeof(float);
    return exact;
  };
  return alternate(node, rank, s, o, reference, parallel);
}

// One training step a repetition on batches of the inputs in turn, labels
// i mod 10 (the timing does not depend on them), gossipd run's optimizer.
WorkerReport bench_training(protocol::Node& node, size_t rank, const RankSetup& s,
                            const SparseBenchOptions& o, const SparseProblem& p) {
  constexpr uint32_t kBenchClasses = 10;
  constexpr float kBenchRate = 0.01f;
  const trainer::OptimizerOptions update{.momentum = 0.9f, .weight_decay = 5e-4f};
  const sp::SparseModel start = sp::make_trainable(p.net, kBenchClasses, o.seed);
  std::vector<uint8_t> labels(p.inputs.count());
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<uint8_t>(i % kBenchClasses);
  const auto batch = [&](int k) {
    const size_t batches = p.inputs.count() / o.batch;
    return sp::SparseBatch{p.inputs, labels, static_cast<size_t>(k) % batches * o.batch, o.batch};
  };
  std::unique_ptr<sp::SparseTrainer> serial;
  if (rank == 0) serial = std::make_unique<sp::SparseTrainer>(start, update);
  RowTraining rows(node, s.ids, share_model(start, s.owners, s.procs, static_cast<uint32_t>(rank)),
                   p.net.neurons, update, s.options, kBenchTags);
  double serial_loss = 0;
  const auto reference = [&](int k) {
    serial_loss = serial->step(batch(k), kBenchRate).loss;
    return true;
  };
  const auto parallel = [&](int k) {
    const double loss = rows.step(batch(k), kBenchRate).loss;
    // The first step starts from the same parameters; later ones drift
    // apart in the last bits (sums in another order, through 120 layers).
    bool exact =
        rank != 0 || k > 0 || std::abs(loss - serial_loss) <= 1e-5 * std::max(1.0, std::abs(serial_loss));
    for (size_t l = 0; l < p.net.layers.size(); ++l)
      exact &= rows.last_bytes().forward[l] == s.planned.sent[l][rank] * o.batch * sizeof(float);
    return exact;
  };
  return alternate(node, rank, s, o, reference, parallel);
}

}  // namespace

WorkerReport run_sparse_rank(protocol::Node& node, size_t rank, const std::vector<std::string>& endpoints,
                             const SparseBenchOptions& o, const SparseProblem& p) {
  const RankSetup s = setup(node, rank, endpoints, o, p);
  return o.train ? bench_training(node, rank, s, o, p) : bench_inference(node, rank, s, o, p);
}

}  // namespace gossipd::daemon
