#include "daemon/bench/collective_bench.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "daemon/bench/collective_ops.h"
#include "daemon/config/cli.h"
#include "protocol/transport/curve.h"

namespace gossipd::daemon {
namespace {

struct BenchCommand {
  const char* name;
  const char* help;
};

constexpr BenchCommand kCommands[] = {
    {"allreduce", "Our allreduce across P local processes (TCP loopback): N bytes in and out"},
    {"allgather", "Our allgather across P local processes: N/P bytes contributed, N out"},
    {"reduce-scatter", "Our reduce-scatter across P local processes: N bytes in, N/P out"},
    {"pingpong", "N bytes from rank 0 to rank 1 and back over a collective channel (2 processes)"},
};

// A multiple of 4 bytes (float32 elements), 4 B to 1 GiB.
CLI::Validator bytes_validator() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        size_t n = 0;
        if (!CLI::detail::lexical_cast(text, n) || n < 4 || n > (size_t{1} << 30) || n % 4 != 0)
          return "must be a multiple of 4 from 4 to 1073741824";
        return {};
      },
      "BYTES");
}

void add_common_options(CLI::App& cmd, CollectiveBenchOptions& o, bool pingpong) {
  cmd.add_option("--procs", o.procs, pingpong ? "Processes (2 only)" : "Processes")
      ->check(pingpong ? CLI::Range(2, 2) : CLI::Range(1, 64))
      ->capture_default_str();
  cmd.add_option("--reps", o.reps, "Timed repetitions (median reported)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd.add_option("--warmup", o.warmup, "Untimed repetitions first")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd.add_option("--chunk-bytes", o.chunk_bytes, "Pipeline piece size")
      ->check(CLI::Range(64, 1 << 30))
      ->capture_default_str();
  cmd.add_option("--timeout-ms", o.timeout_ms, "Per-peer timeout")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  cmd.add_option("--bind-to", o.bind_to, "core: pin each rank to one CPU (OpenMPI's default); none")
      ->check(CLI::IsMember({"core", "none"}))
      ->capture_default_str();
  cmd.add_option("--path", o.path,
                 "Data path: shm (direct connections through shared memory, as gossipd on one host), tcp "
                 "(direct connections on sockets only) or zmq (over ZeroMQ)")
      ->check(CLI::IsMember({"shm", "tcp", "zmq"}))
      ->capture_default_str();
  cmd.add_option("--shm-bytes", o.shm_bytes, "shm: each pipe's bytes (0: gossipd's default)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 30));
  cmd.add_option("--spin-us", o.spin_us, "How long a waiting call spins before blocking in poll(2)")
      ->check(CLI::Range(0, 10000000))
      ->capture_default_str();
  cmd.add_option("--congestion", o.congestion,
                 "TCP congestion control of the direct connections (gossipd run --data-congestion); system: "
                 "the kernel's default")
      ->check(congestion_name())
      ->capture_default_str();
  if (!pingpong) {
    cmd.add_option(
           "--schedule", o.schedule,
           "auto (what the modes use), ring, butterfly (recursive halving/doubling; power-of-two P) or,"
           " for allreduce, doubling (recursive doubling of the whole buffer)")
        ->check(CLI::IsMember({"auto", "ring", "butterfly", "doubling"}))
        ->capture_default_str();
  }
  cmd.add_flag("--curve", o.curve, "CURVE on (a generated key): collectives then go over encrypted ZeroMQ");
  cmd.add_option("--worker-rank", o.worker_rank, "internal: run one rank")->group("");
  cmd.add_option("--curve-key", o.curve_key, "internal: the key file of a --curve run")->group("");
}

CLI::App* add_command(CLI::App& bench, CollectiveBenchOptions& o, const BenchCommand& c) {
  CLI::App* cmd = bench.add_subcommand(c.name, c.help);
  const std::string name = c.name;
  cmd->preparse_callback([&o, name](size_t) { o.op = name; });
  CLI::Option* bytes =
      cmd->add_option("--bytes", o.bytes, "Bytes per rank (the whole buffer each rank holds)")
          ->check(bytes_validator())
          ->capture_default_str();
  if (name == "allreduce") {
    cmd->add_option_function<size_t>(
           "--floats", [&o](const size_t& n) { o.bytes = n * sizeof(float); }, "Same as --bytes 4*N")
        ->check(CLI::Range(size_t{1}, size_t{1} << 28))
        ->excludes(bytes);
  }
  add_common_options(*cmd, o, name == "pingpong");
  return cmd;
}

std::vector<std::string> worker_args(const CollectiveBenchOptions& o, int rank) {
  const auto str = [](auto v) { return std::to_string(v); };
  std::vector<std::string> args{"gossipctl",        "bench",     o.op,           "--procs",
                                str(o.procs),       "--bytes",   str(o.bytes),   "--chunk-bytes",
                                str(o.chunk_bytes), "--path",    o.path,         "--shm-bytes",
                                str(o.shm_bytes),   "--spin-us", str(o.spin_us), "--congestion",
                                o.congestion};
  append_worker_flags(args, {o.reps, o.warmup, o.timeout_ms, o.bind_to}, rank);
  if (o.op != "pingpong") args.insert(args.end(), {"--schedule", o.schedule});
  if (!o.curve_key.empty()) args.insert(args.end(), {"--curve-key", o.curve_key});
  return args;
}

int run_worker(const CollectiveBenchOptions& o) {
  const auto rank = static_cast<size_t>(o.worker_rank);
  std::unique_ptr<protocol::Node> node;
  const auto start = [&] {
    node = std::make_unique<protocol::Node>(bench_node_options(rank, "tcp://127.0.0.1:0", o));
    return node->endpoint();
  };
  const auto body = [&](const std::vector<std::string>& endpoints) {
    return run_collective_rank(*node, rank, endpoints, o);
  };
  return serve_bench_worker(o.worker_rank, o.procs, o.bind_to == "core", o.timeout_ms, start, body);
}

void print_result(const CollectiveBenchOptions& o, const std::vector<WorkerReport>& reports) {
  const std::vector<double> slowest = slowest_per_rep(reports);
  const double seconds = median_of(slowest);
  const double fastest = slowest.empty() ? 0 : *std::min_element(slowest.begin(), slowest.end());
  const bool exact =
      std::all_of(reports.begin(), reports.end(), [](const WorkerReport& r) { return r.exact; });
  const size_t bytes = bench_floats(o) * sizeof(float);
  std::printf(
      "{\"bench\":\"%s\",\"impl\":\"gossipd\",\"path\":\"%s\",\"schedule\":\"%s\",\"procs\":%d,\"bytes\":%zu,"
      "\"seconds\":%.9f,"
      "\"min_seconds\":%.9f,\"algbw_gbps\":%.4f,\"exact\":%s}\n",
      o.op.c_str(), o.curve ? "zmq+curve" : o.path.c_str(), o.op == "pingpong" ? "-" : o.schedule.c_str(),
      o.procs, bytes, seconds, fastest, seconds > 0 ? static_cast<double>(bytes) / seconds * 1e-9 : 0.0,
      exact ? "true" : "false");
  std::fflush(stdout);
}

// A fresh cluster key in a private temporary directory, removed with it.
class BenchKeyFile {
 public:
  BenchKeyFile() {
    std::string dir = (std::filesystem::temp_directory_path() / "gossipd-bench-XXXXXX").string();
    if (!::mkdtemp(dir.data())) throw DaemonError("bench --curve: cannot make a temporary directory");
    dir_ = dir;
    protocol::write_secret_key_file(path(), protocol::generate_keypair());
  }
  ~BenchKeyFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  BenchKeyFile(const BenchKeyFile&) = delete;
  BenchKeyFile& operator=(const BenchKeyFile&) = delete;
  std::string path() const { return (dir_ / "cluster.key").string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace

std::vector<CLI::App*> add_collective_bench_commands(CLI::App& bench, CollectiveBenchOptions& o) {
  std::vector<CLI::App*> commands;
  for (const BenchCommand& c : kCommands) commands.push_back(add_command(bench, o, c));
  return commands;
}

bool collective_bench_parsed(const std::vector<CLI::App*>& commands) {
  return std::any_of(commands.begin(), commands.end(), [](const CLI::App* c) { return c->parsed(); });
}

int run_collective_bench(const CollectiveBenchOptions& options) {
  if (options.worker_rank >= 0) return run_worker(options);
  CollectiveBenchOptions o = options;
  std::unique_ptr<BenchKeyFile> key;
  if (o.curve) {
    key = std::make_unique<BenchKeyFile>();
    o.curve_key = key->path();
  }
  // Each repetition may take up to a timeout per step: bound the whole run.
  const long long run_ms = static_cast<long long>(o.timeout_ms) * (o.reps + o.warmup + 2);
  const auto reports = run_bench_workers(
      o.procs, [&](int rank) { return worker_args(o, rank); }, o.timeout_ms, run_ms);
  print_result(o, reports);
  return 0;
}

}  // namespace gossipd::daemon
