#include "daemon/modes/sparse/sparse_bench.h"

#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "daemon/bench/bench_workers.h"
#include "daemon/bench/collective_bench.h"
#include "daemon/bench/collective_ops.h"
#include "daemon/config/cli.h"
#include "daemon/ctl/compare_hosts.h"
#include "daemon/modes/sparse/net/challenge_files.h"
#include "daemon/modes/sparse/net/radix_net.h"
#include "daemon/modes/sparse/partition_file.h"
#include "daemon/modes/sparse/row_inference.h"
#include "daemon/modes/sparse/sparse_bench_rank.h"
#include "daemon/modes/sparse/sparse_command.h"
#include "daemon/modes/sparse/sparse_traffic.h"

namespace gossipd::daemon {
namespace {

namespace fs = std::filesystem;
namespace sp = trainer::sparse;

SparseProblem load(const SparseBenchOptions& o) {
  const uint32_t n = challenge_width(o.dir, o.neurons, "bench sparse");
  SparseProblem p;
  p.net =
      sp::read_network(o.dir, n, challenge_layers(o.dir, n, o.layers, "bench sparse"), sp::challenge_bias(n));
  p.inputs = sp::read_inputs(o.dir, n);
  if (o.inputs != 0) p.inputs = p.inputs.head(o.inputs);
  return p;
}

// A private temporary directory for the files the parent hands its workers.
class ScratchDir {
 public:
  ScratchDir() {
    std::string dir = (fs::temp_directory_path() / "gossipd-bench-sparse-XXXXXX").string();
    if (!::mkdtemp(dir.data())) throw DaemonError("bench sparse: cannot make a temporary directory");
    dir_ = dir;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

int run_worker(const SparseBenchOptions& o) {
  const auto rank = static_cast<size_t>(o.worker_rank);
  std::unique_ptr<protocol::Node> node;
  SparseProblem p;
  const auto start = [&] {
    if (!o.worker_netns.empty()) enter_netns(o.worker_netns);  // before the node's threads
    p = load(o);  // before the endpoint is published: the parent's phase timeout covers it
    CollectiveBenchOptions c;
    c.procs = o.procs;
    node = std::make_unique<protocol::Node>(bench_node_options(rank, "tcp://" + o.worker_host + ":0", c));
    return node->endpoint();
  };
  const auto body = [&](const std::vector<std::string>& endpoints) {
    return run_sparse_rank(*node, rank, endpoints, o, p);
  };
  return serve_bench_worker(o.worker_rank, o.procs, o.bind_to == "core", o.timeout_ms, start, body);
}

std::vector<std::string> worker_args_common(const SparseBenchOptions& o, int rank) {
  const auto str = [](auto v) { return std::to_string(v); };
  std::vector<std::string> args{
      "gossipctl",         "bench",          "sparse",   o.dir,         "--neurons",        str(o.neurons),
      "--layers",          str(o.layers),    "--inputs", str(o.inputs), "--procs",          str(o.procs),
      "--block",           str(o.block),     "--batch",  str(o.batch),  "--partition-file", o.partition_file,
      "--categories-file", o.categories_file};
  append_worker_flags(args, {o.reps, o.warmup, o.timeout_ms, o.bind_to}, rank);
  if (o.train) args.emplace_back("--train");
  return args;
}

// A worker's command line; in `hosts`, it enters its namespace and binds its address there.
std::vector<std::string> worker_args(const SparseBenchOptions& o, int rank, const NetnsHosts* hosts) {
  std::vector<std::string> args = worker_args_common(o, rank);
  if (hosts)
    args.insert(args.end(), {"--worker-netns", hosts->netns(rank), "--worker-host", hosts->address(rank)});
  return args;
}

// One JSON line: the slowest process's seconds per repetition and the
// serial reference's (rank 0's, alternated with them), medians and bests;
// whether every process was exact.
bool print_result(const SparseBenchOptions& o, const SparseProblem& p, const SparseTraffic& planned,
                  const std::vector<WorkerReport>& reports) {
  const std::vector<double> slowest = slowest_per_rep(reports);
  const std::vector<double>& serial = reports.front().reference_seconds;
  const double seconds = median_of(slowest), fastest = *std::min_element(slowest.begin(), slowest.end());
  const double serial_s = median_of(serial), serial_best = *std::min_element(serial.begin(), serial.end());
  const size_t samples = o.train ? o.batch : p.inputs.count();
  const double edges = static_cast<double>(samples) * static_cast<double>(p.net.edges());
  const bool exact =
      std::all_of(reports.begin(), reports.end(), [](const WorkerReport& r) { return r.exact; });
  std::printf(
      "{\"bench\":\"sparse\",\"run\":\"%s\",\"partition\":\"%s\",\"procs\":%d,\"neurons\":%u,\"layers\":%u,"
      "\"samples\":%zu,\"words_per_product\":%.1f,\"imbalance\":%.4f,\"seconds\":%.6f,\"min_seconds\":%.6f,"
      "\"edges_per_s\":%.4g,\"serial_seconds\":%.6f,\"min_serial_seconds\":%.6f,\"serial_edges_per_s\":%.4g,"
      "\"speedup\":%.3f,\"hosts\":\"%s\",\"exact\":%s}\n",
      o.train ? "train step" : "inference", o.partition.c_str(), o.procs, o.neurons, o.layers, samples,
      planned.words_per_product, planned.imbalance, seconds, fastest, edges / seconds, serial_s, serial_best,
      edges / serial_s, serial_s / seconds,
      o.netns ? ("netns" + (o.bandwidth.empty() ? "" : " " + o.bandwidth)).c_str() : "loopback",
      exact ? "true" : "false");
  std::fflush(stdout);
  return exact;
}

}  // namespace

CLI::App* add_sparse_bench(CLI::App& bench, SparseBenchOptions& o) {
  CLI::App* cmd = bench.add_subcommand("sparse",
                                       "The challenge's inference (or a training step) row-parallel over "
                                       "local processes vs the serial reference, alternately");
  cmd->add_option("dir", o.dir, "Directory with the challenge's files")->required();
  cmd->add_option("--neurons", o.neurons, "Network width N (default: the only neuronN directory)");
  cmd->add_option("--layers", o.layers, "Layers to run (default: every layer file)");
  cmd->add_option("--inputs", o.inputs, "Run the first K inputs only (default: all)");
  cmd->add_option("--procs", o.procs, "Processes P")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--partition", o.partition,
                  "block, random, hypergraph, or a partition file for this network")
      ->capture_default_str();
  cmd->add_option("--imbalance", o.imbalance, "The hypergraph partition's heaviest process over the mean")
      ->check(CLI::Range(1.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the random and hypergraph partitions")->capture_default_str();
  cmd->add_option("--block", o.block, "Samples per block (0: the inference's default)")
      ->check(CLI::Range(size_t{0}, size_t{65536}))
      ->capture_default_str();
  cmd->add_flag("--train", o.train, "Time one training step of --batch samples instead of the inference");
  cmd->add_option("--batch", o.batch, "With --train: samples per step")
      ->check(CLI::Range(size_t{1}, size_t{65536}))
      ->capture_default_str();
  cmd->add_option("--reps", o.reps, "Timed runs (median reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Untimed runs first")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--timeout-ms", o.timeout_ms, "A process silent this long fails the run")
      ->check(CLI::Range(100, 3600000))
      ->capture_default_str();
  cmd->add_option("--bind-to", o.bind_to, "core: process r on CPU r mod #CPUs; none")
      ->check(CLI::IsMember({"core", "none"}))
      ->capture_default_str();
  cmd->add_flag("--netns", o.netns, "One network namespace per process on a private bridge (root)");
  cmd->add_option("--bandwidth", o.bandwidth, "With --netns: cap every host's link, e.g. 1gbit (tc tbf)");
  cmd->add_option("--worker-netns", o.worker_netns, "internal")->group("");
  cmd->add_option("--worker-host", o.worker_host, "internal")->group("");
  cmd->add_option("--worker-rank", o.worker_rank, "internal: run one rank")->group("");
  cmd->add_option("--partition-file", o.partition_file, "internal")->group("");
  cmd->add_option("--categories-file", o.categories_file, "internal")->group("");
  return cmd;
}

int run_sparse_bench(const SparseBenchOptions& options) {
  if (options.worker_rank >= 0) return run_worker(options);
  SparseBenchOptions o = options;
  if (o.netns && ::geteuid() != 0)
    throw UsageError("bench sparse: --netns creates network namespaces: run as root");
  if (!o.bandwidth.empty() && (!o.netns || !is_tc_rate(o.bandwidth))) {
    throw UsageError("bench sparse: --bandwidth " + o.bandwidth +
                     ": a tc rate (e.g. 1gbit) capping the links between namespaces, with --netns");
  }
  const SparseProblem p = load(o);
  o.neurons = p.net.neurons;
  o.layers = static_cast<uint32_t>(p.net.layers.size());
  if (static_cast<uint32_t>(o.procs) > p.net.neurons)
    throw UsageError("bench sparse: --procs " + std::to_string(o.procs) + " is more than the " +
                     std::to_string(p.net.neurons) + " neurons");
  if (o.train && (o.batch == 0 || o.batch > p.inputs.count()))
    throw UsageError("bench sparse: --batch " + std::to_string(o.batch) + ": between 1 and the " +
                     std::to_string(p.inputs.count()) + " inputs");
  NeuronOwners owners;
  try {
    owners = partition_by_spec(o.partition, p.net, static_cast<uint32_t>(o.procs), {o.imbalance, o.seed});
  } catch (const std::invalid_argument& e) {
    throw UsageError("bench sparse: --partition " + o.partition + ": " + e.what());
  }
  const SparseTraffic planned = price_partition(p.net, owners, static_cast<uint32_t>(o.procs));
  ScratchDir scratch;
  o.partition_file = scratch.file("owners.partition");
  o.categories_file = scratch.file("categories.tsv");
  write_partition_file(o.partition_file, p.net, owners, static_cast<uint32_t>(o.procs));
  if (!o.train) sp::write_categories(o.categories_file, sp::infer(p.net, p.inputs).categories);
  const long long run_ms = static_cast<long long>(o.timeout_ms) * (o.reps + o.warmup + 2);
  std::unique_ptr<NetnsHosts> hosts;
  if (o.netns) hosts = std::make_unique<NetnsHosts>(o.procs, o.bandwidth);
  const auto reports = run_bench_workers(
      o.procs, [&](int rank) { return worker_args(o, rank, hosts.get()); }, o.timeout_ms, run_ms);
  if (print_result(o, p, planned, reports)) return kExitOk;
  std::fprintf(stderr,
               "gossipctl bench sparse: a process's categories (training: loss) or payload bytes differ "
               "from the serial reference's and the plan's\n");
  return 1;
}

}  // namespace gossipd::daemon
