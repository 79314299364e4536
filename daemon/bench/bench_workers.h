#pragma once

#include <functional>
#include <string>
#include <vector>

namespace gossipd::daemon {

// What one rank of a multi-process bench measured.
struct WorkerReport {
  bool exact = false;
  std::vector<double> rep_seconds;        // one per timed repetition
  std::vector<double> reference_seconds;  // a reference timed alternately with them, where the bench has one
};

// The parent side: spawns `procs` copies of this executable (each given
// `args(rank)` as its argv, which must select the worker mode), tells every
// worker the others' endpoints and collects their reports. The workers are
// killed and reaped on every exit path; throws DaemonError when one fails or
// is silent for longer than `timeout_ms` (per phase; the run itself may take
// `run_timeout_ms`).
std::vector<WorkerReport> run_bench_workers(int procs,
                                            const std::function<std::vector<std::string>(int)>& args,
                                            int timeout_ms, long long run_timeout_ms);

// The worker side (`rank` of `procs`, spawned by run_bench_workers): binds
// to CPU rank mod #CPUs when `bind_core` (before `start` can start threads,
// as OpenMPI binds its ranks), calls `start` (which binds a free port and
// returns its endpoint), publishes the endpoint, learns everyone's and runs
// `body` with them. Returns the process exit code; errors go to the parent.
using WorkerStart = std::function<std::string()>;
using WorkerBody = std::function<WorkerReport(const std::vector<std::string>& endpoints)>;
int serve_bench_worker(int rank, int procs, bool bind_core, int timeout_ms, const WorkerStart& start,
                       const WorkerBody& body);

// The flags every bench's worker command line carries, after its own:
// --reps, --warmup, --timeout-ms, --bind-to and --worker-rank.
struct WorkerFlags {
  int reps = 0, warmup = 0, timeout_ms = 0;
  std::string bind_to;
};
void append_worker_flags(std::vector<std::string>& args, const WorkerFlags& f, int rank);

// Per repetition the slowest rank's time.
std::vector<double> slowest_per_rep(const std::vector<WorkerReport>& reports);

double median_of(std::vector<double> v);

}  // namespace gossipd::daemon
