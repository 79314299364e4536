#include "daemon/bench/allreduce_bench.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "protocol/barrier.h"
#include "protocol/broadcast_ring.h"
#include "protocol/doubling_allreduce.h"
#include "protocol/ring_collectives.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;
namespace gp = gossipd::protocol;

// Worker pipes are moved to these descriptors in the child.
constexpr int kWorkerIn = 3;
constexpr int kWorkerOut = 4;

// Integer-valued, so any summation order gives the same float.
float bench_input(size_t rank, size_t i) { return static_cast<float>((i * 7 + rank * 13) % 101); }

std::string rank_id(size_t rank) { return "r" + std::to_string(rank); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

AllreduceBenchResult run_rank(gp::Node& node, size_t rank, const std::vector<std::string>& endpoints,
                              const AllreduceBenchOptions& o) {
  const size_t procs = endpoints.size();
  std::vector<std::string> ids;
  for (size_t r = 0; r < procs; ++r) {
    ids.push_back(rank_id(r));
    if (r != rank) node.add_peer(ids.back(), endpoints[r]);
  }
  gp::CollectiveOptions co;
  co.timeout = std::chrono::milliseconds(o.timeout_ms);
  co.chunk_bytes = o.chunk_bytes;
  gp::Group group(node, 0, ids, co);

  std::vector<float> input(o.floats), data(o.floats), expected(o.floats, 0.0f);
  for (size_t i = 0; i < o.floats; ++i) input[i] = bench_input(rank, i);
  for (size_t r = 0; r < procs; ++r) {
    for (size_t i = 0; i < o.floats; ++i) expected[i] += bench_input(r, i);
  }
  gp::Allreduce allreduce(group, data);
  AllreduceBenchResult result;
  result.exact = true;
  for (int rep = 0; rep < o.warmup + o.reps; ++rep) {
    std::copy(input.begin(), input.end(), data.begin());
    gp::Barrier(group).run();  // start together: time the collective, not the skew
    const auto t0 = Clock::now();
    allreduce.run();
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (rep >= o.warmup) result.rep_seconds.push_back(seconds);
    result.exact =
        result.exact && std::memcmp(data.data(), expected.data(), data.size() * sizeof(float)) == 0;
  }
  gp::Barrier(group).run();  // nobody closes while a peer still reads from it
  return result;
}

gp::NodeOptions node_options(size_t rank, const std::string& listen) {
  gp::NodeOptions n;
  n.id = rank_id(rank);
  n.listen = listen;
  n.validation.cluster_id = "bench";
  return n;
}

// Reads one '\n'-terminated line from fd, or throws at the deadline / EOF.
std::string read_line(int fd, Clock::time_point deadline, const std::string& who) {
  std::string line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) throw std::runtime_error(who + ": no answer before the deadline");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) <= 0) continue;
    char c;
    const ssize_t n = ::read(fd, &c, 1);
    if (n == 0) throw std::runtime_error(who + ": exited early");
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(who + ": read failed");
    }
    if (c == '\n') return line;
    line.push_back(c);
  }
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("bench: pipe write failed");
    done += static_cast<size_t>(n);
  }
}

// Worker side: bind port 0, publish the endpoint, learn the others', run.
void bind_to_core(int rank) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(rank) % std::max(1u, std::thread::hardware_concurrency()), &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    throw std::runtime_error(std::string("cannot bind to a core: ") + std::strerror(errno));
  }
}

int run_worker(const AllreduceBenchOptions& o) {
  try {
    if (o.bind_to == "core") bind_to_core(o.worker_rank);  // before the Node starts its threads
    gp::Node node(node_options(static_cast<size_t>(o.worker_rank), "tcp://127.0.0.1:0"));
    write_all(kWorkerOut, node.endpoint() + "\n");
    const auto deadline = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
    std::vector<std::string> endpoints;
    for (int r = 0; r < o.procs; ++r) endpoints.push_back(read_line(kWorkerIn, deadline, "parent"));
    const auto result = run_rank(node, static_cast<size_t>(o.worker_rank), endpoints, o);
    std::ostringstream line;
    line.precision(9);
    line << "ok " << (result.exact ? 1 : 0);
    for (double s : result.rep_seconds) line << ' ' << s;
    write_all(kWorkerOut, line.str() + "\n");
    return 0;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    write_all(kWorkerOut, "error " + msg + "\n");
    return 1;
  }
}

// The spawned workers; killed and reaped on every exit path.
class Workers {
 public:
  struct Child {
    pid_t pid = -1;
    int to_child = -1;
    int from_child = -1;
  };

  ~Workers() {
    for (auto& c : children_) {
      if (c.to_child >= 0) ::close(c.to_child);
      if (c.from_child >= 0) ::close(c.from_child);
      if (c.pid > 0) {
        ::kill(c.pid, SIGKILL);
        ::waitpid(c.pid, nullptr, 0);
      }
    }
  }

  void spawn(const std::vector<std::string>& args) {
    int down[2], up[2];
    if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0)
      throw std::runtime_error("bench: pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("bench: fork failed");
    if (pid == 0) {
      // Child: pipes to fixed descriptors (dup2 clears close-on-exec), and
      // stdout to stderr so that only the parent prints JSON.
      const int in = ::fcntl(down[0], F_DUPFD, 10), out = ::fcntl(up[1], F_DUPFD, 10);
      ::dup2(in, kWorkerIn);
      ::dup2(out, kWorkerOut);
      ::dup2(2, 1);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      ::_exit(127);
    }
    ::close(down[0]);
    ::close(up[1]);
    children_.push_back(Child{pid, down[1], up[0]});
  }

  std::vector<Child>& children() { return children_; }

  // Waits for every child; true when all exited with status 0.
  bool reap() {
    bool ok = true;
    for (auto& c : children_) {
      int status = 0;
      if (c.pid > 0 && ::waitpid(c.pid, &status, 0) == c.pid) {
        ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        c.pid = -1;
      }
    }
    return ok;
  }

 private:
  std::vector<Child> children_;
};

std::vector<std::string> worker_args(const AllreduceBenchOptions& o, int rank) {
  return {"gossipctl",
          "bench",
          "allreduce",
          "--procs",
          std::to_string(o.procs),
          "--floats",
          std::to_string(o.floats),
          "--reps",
          std::to_string(o.reps),
          "--warmup",
          std::to_string(o.warmup),
          "--chunk-bytes",
          std::to_string(o.chunk_bytes),
          "--timeout-ms",
          std::to_string(o.timeout_ms),
          "--bind-to",
          o.bind_to,
          "--worker-rank",
          std::to_string(rank)};
}

}  // namespace

AllreduceBenchResult bench_allreduce_rank(int rank, const std::vector<std::string>& endpoints,
                                          const AllreduceBenchOptions& options) {
  if (rank < 0 || static_cast<size_t>(rank) >= endpoints.size())
    throw std::invalid_argument("bench: bad rank");
  gp::Node node(node_options(static_cast<size_t>(rank), endpoints[static_cast<size_t>(rank)]));
  return run_rank(node, static_cast<size_t>(rank), endpoints, options);
}

double bench_allreduce_median(int rank, const std::vector<std::string>& endpoints,
                              const AllreduceBenchOptions& options) {
  return median(bench_allreduce_rank(rank, endpoints, options).rep_seconds);
}

CLI::App* add_allreduce_bench_command(CLI::App& bench, AllreduceBenchOptions& o) {
  CLI::App* cmd =
      bench.add_subcommand("allreduce", "Our ring allreduce across P local processes (TCP loopback)");
  cmd->add_option("--procs", o.procs, "Processes")->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--floats", o.floats, "float32 elements per buffer")
      ->check(CLI::Range(0, 1 << 30))
      ->capture_default_str();
  cmd->add_option("--reps", o.reps, "Timed repetitions (median reported)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Untimed repetitions first")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--chunk-bytes", o.chunk_bytes, "Pipeline piece size")
      ->check(CLI::Range(64, 1 << 30))
      ->capture_default_str();
  cmd->add_option("--timeout-ms", o.timeout_ms, "Per-peer timeout")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  cmd->add_option("--bind-to", o.bind_to, "core: pin each rank to one CPU (OpenMPI's default); none")
      ->check(CLI::IsMember({"core", "none"}))
      ->capture_default_str();
  cmd->add_option("--worker-rank", o.worker_rank, "internal: run one rank")->group("");
  return cmd;
}

int run_allreduce_bench(const AllreduceBenchOptions& o) {
  if (o.worker_rank >= 0) return run_worker(o);
  Workers workers;
  for (int r = 0; r < o.procs; ++r) workers.spawn(worker_args(o, r));
  auto deadline = Clock::now() + std::chrono::milliseconds(o.timeout_ms);
  std::string endpoints;
  for (int r = 0; r < o.procs; ++r) {
    endpoints += read_line(workers.children()[r].from_child, deadline, "worker " + std::to_string(r)) + "\n";
  }
  for (auto& c : workers.children()) write_all(c.to_child, endpoints);

  // Per repetition the slowest rank's time, then the median over repetitions.
  std::vector<double> slowest(static_cast<size_t>(o.reps), 0.0);
  bool exact = true;
  deadline = Clock::now() + std::chrono::milliseconds(o.timeout_ms) * (o.reps + o.warmup + 2);
  for (int r = 0; r < o.procs; ++r) {
    const std::string line =
        read_line(workers.children()[r].from_child, deadline, "worker " + std::to_string(r));
    std::istringstream in(line);
    std::string status;
    int ok = 0;
    in >> status;
    if (status != "ok") throw std::runtime_error("worker " + std::to_string(r) + ": " + line);
    in >> ok;
    exact = exact && ok == 1;
    for (auto& s : slowest) {
      double t = 0;
      in >> t;
      s = std::max(s, t);
    }
  }
  if (!workers.reap()) throw std::runtime_error("bench: a worker exited with an error");
  const double seconds = median(slowest);
  const double fastest = *std::min_element(slowest.begin(), slowest.end());
  const double bytes = static_cast<double>(o.floats) * sizeof(float);
  std::printf(
      "{\"bench\":\"allreduce\",\"impl\":\"gossipd\",\"procs\":%d,\"floats\":%zu,\"seconds\":%.6f,"
      "\"algbw_gbps\":%.4f,\"min_seconds\":%.6f,\"exact\":%s}\n",
      o.procs, o.floats, seconds, seconds > 0 ? bytes / seconds * 1e-9 : 0.0, fastest,
      exact ? "true" : "false");
  std::fflush(stdout);
  return 0;
}

}  // namespace gossipd::daemon
