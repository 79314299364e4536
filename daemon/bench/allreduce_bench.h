#pragma once

#include <string>
#include <vector>

#include "daemon/config/cli.h"  // CLI::App, declared

namespace gossipd::daemon {

struct AllreduceBenchOptions {
  int procs = 2;
  size_t floats = size_t{1} << 20;
  int reps = 10;   // timed repetitions (median reported)
  int warmup = 2;  // untimed repetitions first
  size_t chunk_bytes = size_t{512} << 10;
  int timeout_ms = 30000;
  // "core": rank r and every thread it starts run on CPU r mod #CPUs, as
  // OpenMPI binds ranks by default; hand-offs between the collective thread
  // and the ZeroMQ I/O thread then stay on one CPU. "none": the scheduler decides.
  std::string bind_to = "core";
  // Hidden worker mode: set in the child processes the parent spawns.
  int worker_rank = -1;
};

struct AllreduceBenchResult {
  std::vector<double> rep_seconds;  // one per timed repetition
  bool exact = false;               // bit-identical to the serial sum
};

// Runs our ring allreduce as `rank` of `endpoints.size()` in THIS process over
// ZmqTransport: binds endpoints[rank], connects the others, allreduces
// integer-valued inputs. Use endpoints you know are free, or the spawning
// bench below, which binds port 0 and publishes the real endpoints.
AllreduceBenchResult bench_allreduce_rank(int rank, const std::vector<std::string>& endpoints,
                                          const AllreduceBenchOptions& options);

// Median of bench_allreduce_rank's repetition times.
double bench_allreduce_median(int rank, const std::vector<std::string>& endpoints,
                              const AllreduceBenchOptions& options);

// `gossipctl bench allreduce --procs P --floats N --reps R`.
CLI::App* add_allreduce_bench_command(CLI::App& bench, AllreduceBenchOptions& options);

// Spawns P workers (this executable in its hidden worker mode) on loopback
// and prints one JSON line: procs, floats, seconds (median over repetitions of
// the slowest rank), algbw_gbps (buffer bytes / time) and exact. In worker
// mode it runs one rank instead.
int run_allreduce_bench(const AllreduceBenchOptions& options);

}  // namespace gossipd::daemon
