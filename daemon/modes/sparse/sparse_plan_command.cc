#include "daemon/modes/sparse/sparse_plan_command.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "daemon/config/cli.h"
#include "daemon/modes/sparse/net/challenge_files.h"
#include "daemon/modes/sparse/net/radix_net.h"
#include "daemon/modes/sparse/partition_file.h"
#include "daemon/modes/sparse/sparse_partition.h"
#include "daemon/modes/sparse/sparse_traffic.h"

namespace gossipd::daemon {
namespace {

namespace sp = trainer::sparse;

struct SparseRow {
  std::string name;
  SparseTraffic traffic;
  double seconds = 0;
};

sp::SparseNet plan_network(const PlanSparseOptions& o) {
  sp::SparseNet net;
  if (!o.dir.empty()) {
    net = sp::read_network(o.dir, o.neurons, o.layers, sp::challenge_bias(o.neurons));
  } else {
    try {
      net = sp::make_radix_net(o.neurons, o.layers);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("plan sparse: --neurons: ") + e.what());
    }
  }
  return o.shuffle != 0 ? sp::shuffle_neurons(net, o.shuffle) : net;
}

void print_table(const PlanSparseOptions& o, const sp::SparseNet& net, const std::vector<SparseRow>& rows) {
  std::printf(
      "gossipctl plan sparse: %u neurons x %u layers (%zu edges)%s over %u processes, hypergraph imbalance "
      "at most %.2f; words per sample and product\n\n",
      o.neurons, o.layers, net.edges(), o.shuffle ? " with shuffled neurons" : "", o.procs, o.imbalance);
  std::printf("| partitioner | words per product | most one process sends | imbalance | partition ms |\n");
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (const SparseRow& r : rows) {
    std::printf("| %s | %.1f | %.1f | %.3f | %.1f |\n", r.name.c_str(), r.traffic.words_per_product,
                r.traffic.most_sent_per_product, r.traffic.imbalance, r.seconds * 1e3);
  }
  const double block = rows.front().traffic.words_per_product;
  if (block > 0)
    std::printf("\nhypergraph / block words: %.3f\n", rows.back().traffic.words_per_product / block);
}

void print_json(const PlanSparseOptions& o, const std::vector<SparseRow>& rows) {
  std::printf(
      "{\"plan\":\"sparse\",\"neurons\":%u,\"layers\":%u,\"procs\":%u,\"shuffle\":%llu,\"imbalance_tol\":%g,"
      "\"partitioners\":[",
      o.neurons, o.layers, o.procs, static_cast<unsigned long long>(o.shuffle), o.imbalance);
  for (size_t k = 0; k < rows.size(); ++k) {
    const SparseTraffic& t = rows[k].traffic;
    std::printf(
        "%s{\"name\":\"%s\",\"words\":%llu,\"words_per_product\":%.3f,\"most_sent_per_product\":%.3f,"
        "\"imbalance\":%.6f,\"seconds\":%.6f}",
        k ? "," : "", rows[k].name.c_str(), static_cast<unsigned long long>(t.words), t.words_per_product,
        t.most_sent_per_product, t.imbalance, rows[k].seconds);
  }
  std::printf("]}\n");
}

}  // namespace

CLI::App* add_plan_sparse(CLI::App& plan, PlanSparseOptions& o) {
  CLI::App* cmd = plan.add_subcommand(
      "sparse", "Words per product and load imbalance of block, random and hypergraph neuron partitions");
  cmd->add_option("--neurons", o.neurons, "Neurons per layer N")->capture_default_str();
  cmd->add_option("--layers", o.layers, "Layers L")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--procs", o.procs, "Processes P")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--dir", o.dir,
                  "Read the network from the challenge's files in DIR (default: a RadiX-Net)");
  cmd->add_option("--shuffle", o.shuffle, "Renumber every layer's neurons with this seed first (0: no)")
      ->capture_default_str();
  cmd->add_option("--imbalance", o.imbalance,
                  "The hypergraph partition's heaviest process over the mean, at most")
      ->check(CLI::Range(1.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the random and hypergraph partitions")->capture_default_str();
  cmd->add_option("--write-partitions", o.write_partitions,
                  "Write each partition to DIR/PARTITIONER-pP.partition (for this network only)");
  cmd->add_flag("--json", o.json, "One JSON object instead of the table");
  return cmd;
}

int run_plan_sparse(const PlanSparseOptions& o) {
  const sp::SparseNet net = plan_network(o);
  if (o.procs > net.neurons)
    throw UsageError("plan sparse: --procs " + std::to_string(o.procs) + " is more than the " +
                     std::to_string(net.neurons) + " neurons");
  std::vector<SparseRow> rows;
  for (const std::string& name : partitioner_names()) {
    const auto t0 = std::chrono::steady_clock::now();
    const NeuronOwners owners =
        partition_neurons(net, o.procs, parse_partitioner(name), {o.imbalance, o.seed});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rows.push_back({name, price_partition(net, owners, o.procs), s});
    if (!o.write_partitions.empty()) {
      std::filesystem::create_directories(o.write_partitions);
      write_partition_file(
          std::filesystem::path(o.write_partitions) / (name + "-p" + std::to_string(o.procs) + ".partition"),
          net, owners, o.procs);
    }
  }
  if (o.json) {
    print_json(o, rows);
  } else {
    print_table(o, net, rows);
  }
  return kExitOk;
}

}  // namespace gossipd::daemon
