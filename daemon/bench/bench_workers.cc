#include "daemon/bench/bench_workers.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "daemon/config/cli.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// Worker pipes are moved to these descriptors in the child.
constexpr int kWorkerIn = 3;
constexpr int kWorkerOut = 4;

std::string worker_name(int rank) {
  std::ostringstream s;
  s << "worker " << rank;
  return s.str();
}

// Reads one '\n'-terminated line from fd, or throws at the deadline / EOF.
std::string read_line(int fd, Clock::time_point deadline, const std::string& who) {
  std::string line;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) throw DaemonError(who + ": no answer before the deadline");
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) <= 0) continue;
    char c;
    const ssize_t n = ::read(fd, &c, 1);
    if (n == 0) throw DaemonError(who + ": exited early");
    if (n < 0) {
      if (errno == EINTR) continue;
      throw DaemonError(who + ": read failed");
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
    if (n <= 0) throw DaemonError("bench: pipe write failed");
    done += static_cast<size_t>(n);
  }
}

void bind_to_core(int rank) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(static_cast<unsigned>(rank) % std::max(1u, std::thread::hardware_concurrency()), &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    throw DaemonError(std::string("cannot bind to a core: ") + std::strerror(errno));
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

  Workers() = default;
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;
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
    if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0) throw DaemonError("bench: pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw DaemonError("bench: fork failed");
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

// "ok EXACT T1 T2 ... [| R1 R2 ...]" or "error MESSAGE".
WorkerReport parse_report(const std::string& line, const std::string& who) {
  std::istringstream in(line);
  std::string status;
  int exact = 0;
  in >> status;
  if (status != "ok") throw DaemonError(who + ": " + line);
  in >> exact;
  WorkerReport report;
  report.exact = exact == 1;
  for (double t = 0; in >> t;) report.rep_seconds.push_back(t);
  in.clear();
  std::string bar;
  if (in >> bar && bar == "|")
    for (double t = 0; in >> t;) report.reference_seconds.push_back(t);
  return report;
}

std::string format_report(const WorkerReport& report) {
  std::ostringstream line;
  line.precision(9);
  line << "ok " << (report.exact ? 1 : 0);
  for (double s : report.rep_seconds) line << ' ' << s;
  if (!report.reference_seconds.empty()) line << " |";
  for (double s : report.reference_seconds) line << ' ' << s;
  line << '\n';
  return line.str();
}

}  // namespace

std::vector<WorkerReport> run_bench_workers(int procs,
                                            const std::function<std::vector<std::string>(int)>& args,
                                            int timeout_ms, long long run_timeout_ms) {
  Workers workers;
  for (int r = 0; r < procs; ++r) workers.spawn(args(r));
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string endpoints;
  for (int r = 0; r < procs; ++r) {
    endpoints += read_line(workers.children()[r].from_child, deadline, worker_name(r));
    endpoints += '\n';
  }
  for (auto& c : workers.children()) write_all(c.to_child, endpoints);

  deadline = Clock::now() + std::chrono::milliseconds(run_timeout_ms);
  std::vector<WorkerReport> reports;
  for (int r = 0; r < procs; ++r) {
    const std::string who = worker_name(r);
    reports.push_back(parse_report(read_line(workers.children()[r].from_child, deadline, who), who));
  }
  if (!workers.reap()) throw DaemonError("bench: a worker exited with an error");
  return reports;
}

int serve_bench_worker(int rank, int procs, bool bind_core, int timeout_ms, const WorkerStart& start,
                       const WorkerBody& body) {
  try {
    if (bind_core) bind_to_core(rank);
    write_all(kWorkerOut, start() + "\n");
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::vector<std::string> endpoints;
    for (int r = 0; r < procs; ++r) endpoints.push_back(read_line(kWorkerIn, deadline, "parent"));
    write_all(kWorkerOut, format_report(body(endpoints)));
    return 0;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    write_all(kWorkerOut, "error " + msg + "\n");
    return 1;
  }
}

void append_worker_flags(std::vector<std::string>& args, const WorkerFlags& f, int rank) {
  args.insert(args.end(),
              {"--reps", std::to_string(f.reps), "--warmup", std::to_string(f.warmup), "--timeout-ms",
               std::to_string(f.timeout_ms), "--bind-to", f.bind_to, "--worker-rank", std::to_string(rank)});
}

std::vector<double> slowest_per_rep(const std::vector<WorkerReport>& reports) {
  std::vector<double> slowest;
  for (const auto& report : reports) {
    if (slowest.size() < report.rep_seconds.size()) slowest.resize(report.rep_seconds.size(), 0.0);
    for (size_t i = 0; i < report.rep_seconds.size(); ++i)
      slowest[i] = std::max(slowest[i], report.rep_seconds[i]);
  }
  return slowest;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace gossipd::daemon
