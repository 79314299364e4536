#include "daemon/modes/allreduce/two_level_bench.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "daemon/bench/bench_workers.h"
#include "daemon/bench/collective_bench.h"
#include "daemon/bench/collective_ops.h"
#include "daemon/config/cli.h"
#include "daemon/ctl/compare_hosts.h"
#include "protocol/collectives/barrier.h"
#include "protocol/collectives/collectives.h"
#include "protocol/collectives/two_levels.h"

namespace gossipd::daemon {
namespace {

namespace gp = protocol;
using Clock = std::chrono::steady_clock;

int procs_of(const TwoLevelBenchOptions& o) { return o.hosts * o.per_host; }

int host_of(const TwoLevelBenchOptions& o, int rank) {
  return o.placement == "block" ? rank / o.per_host : rank % o.hosts;
}

// One form, timed from a barrier on; whether it gave `expected`.
bool timed(gp::Group& group, std::vector<float>& data, const std::vector<float>& expected,
           const std::function<void()>& form, std::vector<double>& seconds, bool keep) {
  data = inputs_of(group.rank(), data.size());
  gp::Barrier(group).run();
  const auto t0 = Clock::now();
  form();
  if (keep) seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  return data == expected;
}

// Per repetition both forms, the first of them alternating: rep_seconds the
// two levels, reference_seconds the flat ring.
WorkerReport run_rank(gp::Node& node, size_t rank, const std::vector<std::string>& endpoints,
                      const TwoLevelBenchOptions& o) {
  gp::CollectiveOptions co;
  co.timeout = std::chrono::milliseconds(o.timeout_ms);
  gp::Group group(node, 0, add_bench_peers(node, rank, endpoints), co);
  const gp::HostLayout layout = gp::agreed_host_layout(group);
  if (!gp::two_levels_apply(layout))
    throw DaemonError("bench two-level: the ranks' endpoints do not make hosts of two or more each");
  gp::TwoLevelCollectives two(group, layout);
  std::vector<float> data(o.bytes / sizeof(float));
  const std::vector<float> expected = serial_sum(group.size(), data.size());
  WorkerReport report;
  report.exact = true;
  const bool sharded = o.op == "sharded";
  const auto flat = [&] {
    if (!sharded) return gp::Allreduce(group, data).run();
    gp::ReduceScatter(group, data).run();
    gp::Allgather(group, data).run();
  };
  const auto levels = [&] {
    if (!sharded) return two.run(data);
    two.reduce_scatter(data);
    two.allgather(data);
  };
  for (int k = 0; k < o.warmup + o.reps; ++k) {
    const bool keep = k >= o.warmup;
    const bool flat_first = k % 2 == 0;
    for (int turn = 0; turn < 2; ++turn) {
      const bool is_flat = (turn == 0) == flat_first;
      report.exact &= timed(group, data, expected, is_flat ? std::function<void()>(flat) : levels,
                            is_flat ? report.reference_seconds : report.rep_seconds, keep);
    }
  }
  gp::Barrier(group).run();  // nobody closes while a peer still reads from it
  return report;
}

int run_worker(const TwoLevelBenchOptions& o) {
  const auto rank = static_cast<size_t>(o.worker_rank);
  std::unique_ptr<gp::Node> node;
  const auto start = [&] {
    enter_netns(o.worker_netns);  // before the node's threads
    CollectiveBenchOptions c;
    c.procs = procs_of(o);
    node = std::make_unique<gp::Node>(bench_node_options(rank, "tcp://" + o.worker_host + ":0", c));
    return node->endpoint();
  };
  const auto body = [&](const std::vector<std::string>& endpoints) {
    return run_rank(*node, rank, endpoints, o);
  };
  return serve_bench_worker(o.worker_rank, procs_of(o), o.bind_to == "core", o.timeout_ms, start, body);
}

std::vector<std::string> worker_args(const TwoLevelBenchOptions& o, int rank, const NetnsHosts& hosts) {
  const int host = host_of(o, rank);
  std::vector<std::string> args{"gossipctl",
                                "bench",
                                "two-level",
                                "--hosts",
                                std::to_string(o.hosts),
                                "--per-host",
                                std::to_string(o.per_host),
                                "--placement",
                                o.placement,
                                "--op",
                                o.op,
                                "--bytes",
                                std::to_string(o.bytes),
                                "--worker-netns",
                                hosts.netns(host),
                                "--worker-host",
                                hosts.address(host)};
  append_worker_flags(args, {o.reps, o.warmup, o.timeout_ms, o.bind_to}, rank);
  return args;
}

std::vector<double> slowest_reference(const std::vector<WorkerReport>& reports) {
  std::vector<WorkerReport> swapped(reports);
  for (WorkerReport& r : swapped) r.rep_seconds = r.reference_seconds;
  return slowest_per_rep(swapped);
}

// One JSON line: both forms' medians and bests (the slowest rank per
// repetition), the flat ring over the two levels, and whether all were exact.
int print_result(const TwoLevelBenchOptions& o, const std::vector<WorkerReport>& reports) {
  const std::vector<double> two = slowest_per_rep(reports), flat = slowest_reference(reports);
  const bool exact =
      std::all_of(reports.begin(), reports.end(), [](const WorkerReport& r) { return r.exact; });
  const double two_s = median_of(two), flat_s = median_of(flat);
  std::printf(
      "{\"bench\":\"two-level\",\"op\":\"%s\",\"hosts\":%d,\"per_host\":%d,\"placement\":\"%s\","
      "\"bandwidth\":\"%s\","
      "\"bytes\":%zu,\"flat_seconds\":%.6f,\"min_flat_seconds\":%.6f,\"two_level_seconds\":%.6f,"
      "\"min_two_level_seconds\":%.6f,\"flat_over_two_level\":%.3f,\"exact\":%s}\n",
      o.op.c_str(), o.hosts, o.per_host, o.placement.c_str(),
      o.bandwidth.empty() ? "none" : o.bandwidth.c_str(), o.bytes, flat_s,
      *std::min_element(flat.begin(), flat.end()), two_s, *std::min_element(two.begin(), two.end()),
      flat_s / two_s, exact ? "true" : "false");
  std::fflush(stdout);
  if (exact) return kExitOk;
  std::fprintf(stderr, "gossipctl bench two-level: a sum differs from the serial one\n");
  return 1;
}

int run_two_level_bench(const TwoLevelBenchOptions& o) {
  if (o.worker_rank >= 0) return run_worker(o);
  if (::geteuid() != 0) throw UsageError("bench two-level: it creates network namespaces: run as root");
  if (!o.bandwidth.empty() && !is_tc_rate(o.bandwidth))
    throw UsageError("bench two-level: --bandwidth " + o.bandwidth + ": a tc rate such as 100mbit, or \"\"");
  NetnsHosts hosts(o.hosts, o.bandwidth);
  const long long run_ms = static_cast<long long>(o.timeout_ms) * 2 * (o.reps + o.warmup + 2);
  const auto reports = run_bench_workers(
      procs_of(o), [&](int rank) { return worker_args(o, rank, hosts); }, o.timeout_ms, run_ms);
  return print_result(o, reports);
}

CLI::App* add_two_level_bench(CLI::App& bench, TwoLevelBenchOptions& o) {
  CLI::App* cmd = bench.add_subcommand(
      "two-level",
      "Allreduce in two levels (in each host, then across) vs one flat ring, alternately, over "
      "network-namespace hosts (root)");
  cmd->add_option("--hosts", o.hosts, "Hosts (network namespaces)")
      ->check(CLI::Range(2, 16))
      ->capture_default_str();
  cmd->add_option("--per-host", o.per_host, "Processes on each host")
      ->check(CLI::Range(2, 16))
      ->capture_default_str();
  cmd->add_option("--bandwidth", o.bandwidth, "Every host's link cap, a tc rate (\"\": none)")
      ->capture_default_str();
  cmd->add_option("--placement", o.placement,
                  "block: a host's ranks are neighbours; round-robin: rank r on host r mod H")
      ->check(CLI::IsMember({"block", "round-robin"}))
      ->capture_default_str();
  cmd->add_option("--op", o.op,
                  "allreduce, or sharded: a reduce-scatter then an allgather (a sharded update's halves)")
      ->check(CLI::IsMember({"allreduce", "sharded"}))
      ->capture_default_str();
  cmd->add_option("--bytes", o.bytes, "Bytes per rank, a multiple of 4")
      ->check(CLI::Range(size_t{4}, size_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--reps", o.reps, "Timed repetitions of each form")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Untimed repetitions first")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--timeout-ms", o.timeout_ms, "A silent peer fails the run")
      ->check(CLI::Range(100, 3600000))
      ->capture_default_str();
  cmd->add_option("--bind-to", o.bind_to, "core: process r on CPU r mod #CPUs; none")
      ->check(CLI::IsMember({"core", "none"}))
      ->capture_default_str();
  cmd->add_option("--worker-rank", o.worker_rank, "internal: run one rank")->group("");
  cmd->add_option("--worker-netns", o.worker_netns, "internal")->group("");
  cmd->add_option("--worker-host", o.worker_host, "internal")->group("");
  return cmd;
}

class AllreduceTools : public ModeTools {
 public:
  void add(ToolParents& parents) override { bench_ = add_two_level_bench(parents.bench, options_); }
  std::optional<int> run() override {
    if (!was_parsed(bench_)) return std::nullopt;
    return run_two_level_bench(options_);
  }

 private:
  TwoLevelBenchOptions options_;
  CLI::App* bench_ = nullptr;
};

}  // namespace

std::unique_ptr<ModeTools> make_allreduce_tools() { return std::make_unique<AllreduceTools>(); }

}  // namespace gossipd::daemon
