#include "daemon/modes/sparse/sparse_mode.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>

#include "daemon/config/cli.h"
#include "daemon/modes/sparse/net/radix_net.h"
#include "daemon/modes/sparse/sparse_partition.h"
#include "daemon/modes/sparse/sparse_rows.h"
#include "daemon/modes/sparse/sparse_worker.h"

namespace gossipd::daemon {
namespace {

namespace sp = trainer::sparse;
constexpr uint32_t kClasses = 10;

// One sparse network's neurons over the members (--partition), row-parallel.
class SparseMode : public Mode {
 public:
  std::string name() const override { return "sparse"; }
  std::string summary() const override {
    return "Sparse: one sparse network (RadiX-Net, --neurons, --layers), every layer's neurons over the "
           "members (--partition), row-parallel";
  }
  void add_flags(ModeFlags& f) override;
  void check_flags(const RunOptions& o) const override;

  uint32_t tag_count() const override { return kSparseTagCount; }
  std::string entry_syntax() const override { return ""; }
  std::string why_not_in_compare() const override {
    return "--algos sparse: compare does not run the sparse mode (its network is not the MLP or CNN the "
           "others train); run gossipd run --algo sparse, or gossipctl bench sparse";
  }

  std::unique_ptr<Replica> load(const RunOptions& o, const Placement& where) const override;
  size_t steps_per_epoch(const RunOptions&, size_t samples, size_t, size_t batch) const override {
    return data_parallel_steps(samples, 1, batch);
  }
  bool accepts_joins() const override { return false; }
  bool writes_checkpoints() const override { return false; }
  bool one_replica() const override { return true; }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override {
    return make_sparse_worker(c, static_cast<SparseReplica&>(c.replica), tags());
  }

 private:
  uint32_t neurons() const { return flags_.neurons != 0 ? flags_.neurons : 1024; }
  uint32_t layers() const { return flags_.layers != 0 ? flags_.layers : 4; }
  std::string spec() const { return flags_.partition == "auto" ? "hypergraph" : flags_.partition; }
  void share_out(SparseReplica& r, uint32_t seed) const;

  SparseFlags flags_;
};

void SparseMode::add_flags(ModeFlags& f) {
  f.option(
      "--neurons", flags_.neurons,
      "--algo sparse: N neurons per layer of the RadiX-Net trained (a power of two and a square: 64, 256, "
      "1024, 4096, ...; default 1024); rank r (members sorted by id) is process r of the partition");
  f.option("--layers", flags_.layers, "--algo sparse: L sparse layers (default 4)")
      ->check(CLI::Range(uint32_t{1}, uint32_t{4096}));
  f.option("--imbalance", flags_.imbalance,
           "--algo sparse: the hypergraph partition's heaviest process over the mean, per layer")
      ->check(CLI::Range(1.0, 10.0))
      ->capture_default_str();
  f.option("--partition", flags_.partition,
           "--algo sparse: the neurons' owners: auto (= hypergraph), block, random, hypergraph (Zoltan PHG), "
           "or a file gossipctl plan sparse --write-partitions wrote for this network and P");
  f.refusal("--neurons", "--neurons and --layers are for --algo sparse");
  f.refusal("--layers", "--neurons and --layers are for --algo sparse");
}

void SparseMode::check_flags(const RunOptions& o) const {
  if (!o.join.empty())
    throw UsageError("--algo sparse takes no joiners (its partition is made for P processes): drop --join");
  if (!o.checkpoint_dir.empty())
    throw UsageError("--algo sparse writes no checkpoints yet: drop --checkpoint-dir");
  if (o.train.optimizer == "lars")
    throw UsageError(
        "--optimizer lars is not for --algo sparse (its norms would need whole layers): use sgd");
}

// The network, its partition over the members and this process's share.
void SparseMode::share_out(SparseReplica& r, uint32_t seed) const {
  const uint32_t n = r.neurons;
  const auto side = static_cast<uint32_t>(std::lround(std::sqrt(static_cast<double>(n))));
  if (side * side != n || (n & (n - 1)) != 0 || n < 64) {
    throw UsageError("--neurons " + std::to_string(n) +
                     ": the network is a RadiX-Net (a power of two) fed √N × √N images (a square): use "
                     "64, 256, 1024, 4096, 16384 or 65536");
  }
  if (r.processes > 64 || r.processes > n) {
    throw UsageError("--algo sparse: " + std::to_string(r.processes) + " members for " + std::to_string(n) +
                     " neurons per layer: at most 64 and at most N");
  }
  const sp::SparseNet pattern = sp::make_radix_net(n, r.layers);
  NeuronOwners owners;
  try {
    owners = partition_by_spec(r.partition, pattern, r.processes, {flags_.imbalance, seed});
  } catch (const std::invalid_argument& e) {
    throw UsageError("--partition " + r.partition + ": " + e.what());
  }
  r.planned = price_partition(pattern, owners, r.processes);
  r.share = share_model(sp::make_trainable(pattern, kClasses, seed), owners, r.processes, r.rank);
}

std::unique_ptr<Replica> SparseMode::load(const RunOptions& o, const Placement& where) const {
  auto r = std::make_unique<SparseReplica>();
  r->neurons = neurons();
  r->layers = layers();
  r->rank = static_cast<uint32_t>(where.rank);
  r->processes = static_cast<uint32_t>(where.members);
  r->partition = spec();
  share_out(*r, o.train.seed);
  auto [train, test] =
      trainer::load_fashion_mnist_splits(data_dir(o.train), o.train.train_limit, o.train.test_limit);
  r->train = sp::sparse_dataset(train, r->neurons);
  r->test = sp::sparse_dataset(test, r->neurons);
  if (r->train.inputs.count() < o.train.batch) {
    throw UsageError("--batch " + std::to_string(o.train.batch) + " is more than the " +
                     std::to_string(r->train.inputs.count()) + " training samples");
  }
  return r;
}

}  // namespace

std::vector<float> sparse_params(const RowModel& share) {
  std::vector<float> out;
  const auto add = [&](const std::vector<float>& v) { out.insert(out.end(), v.begin(), v.end()); };
  for (const RowProduct& p : share.share.products) {
    for (const RowSet* s : {&p.local, &p.remote}) {
      add(s->rows.weights);
      add(s->rows.bias);
    }
  }
  add(share.head.weights);
  add(share.head_bias);
  return out;
}

std::string SparseReplica::config_summary() const {
  size_t edges = 0;
  for (const RowProduct& p : share.share.products) edges += p.local.rows.edges() + p.remote.rows.edges();
  char line[400];
  std::snprintf(line, sizeof(line),
                "%u neurons x %u layers, process %u of %u, partition %s: %.1f words per product, imbalance "
                "%.3f; %zu edges here, %zu training samples",
                neurons, layers, rank, processes, partition.c_str(), planned.words_per_product,
                planned.imbalance, edges, train.inputs.count());
  return line;
}

std::unique_ptr<Mode> make_sparse_mode() { return std::make_unique<SparseMode>(); }

}  // namespace gossipd::daemon
