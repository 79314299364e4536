#pragma once

#include <string>
#include <vector>

#include "daemon/bench/bench_workers.h"
#include "daemon/config/cli.h"  // CLI::App, declared
#include "protocol/transport/data_socket.h"

namespace gossipd::daemon {

// `gossipctl bench allreduce|allgather|reduce-scatter|pingpong`: one of our
// collectives across P processes on TCP loopback, sized as nccl-tests and
// the reference tests/bench/mpi_collectives.c size them: `bytes` is the
// buffer each rank holds (allreduce: N in and out; reduce-scatter: N in,
// N/P out; allgather: N/P contributed, N out; pingpong: one message of N).
struct CollectiveBenchOptions {
  std::string op = "allreduce";  // set by the subcommand
  int procs = 2;
  size_t bytes = size_t{4} << 20;
  int reps = 30;   // timed repetitions (median reported)
  int warmup = 2;  // untimed repetitions first
  size_t chunk_bytes = size_t{512} << 10;
  int timeout_ms = 30000;
  // "core": rank r and every thread it starts run on CPU r mod #CPUs, as
  // OpenMPI binds ranks by default. "none": the scheduler decides.
  std::string bind_to = "core";
  // shm: the direct path with shared memory between the ranks (the
  // daemon's default on one host); tcp: the direct path on sockets only; zmq.
  std::string path = "shm";
  size_t shm_bytes = 0;  // shm: NodeOptions::shared_memory_bytes (0: its default)
  int spin_us = 200;     // CollectiveOptions::spin
  // DataSocketTuning::congestion of the direct connections; "system": the kernel's default.
  std::string congestion = protocol::kDefaultCongestion;
  // auto: the schedule the modes get (Allreduce, ReduceScatter, Allgather);
  // ring; butterfly (recursive doubling / halving, power-of-two groups).
  std::string schedule = "auto";
  // CURVE on every rank (one generated cluster key): the direct path is then
  // off, so this measures what CURVE costs collectives (path "zmq+curve").
  bool curve = false;
  // Hidden worker mode: set in the child processes the parent spawns, with
  // the key file the parent wrote when `curve`.
  int worker_rank = -1;
  std::string curve_key;
};

// float32 elements each rank's buffer holds for `o`: bytes / 4, and for
// allgather and reduce-scatter a multiple of P (at least P), as MPI's
// equal-block calls need.
size_t bench_floats(const CollectiveBenchOptions& o);

// Runs the bench as `rank` of `endpoints.size()` in THIS process: binds
// endpoints[rank], connects the others, repeats the op on integer-valued
// inputs and checks every result against the serial one. Use endpoints you
// know are free, or run_collective_bench, which binds port 0.
WorkerReport bench_collective_rank(int rank, const std::vector<std::string>& endpoints,
                                   const CollectiveBenchOptions& options);

// The four subcommands of `gossipctl bench`, bound to `options` (each sets
// options.op when parsed). `collective_bench_parsed` says whether one was.
std::vector<CLI::App*> add_collective_bench_commands(CLI::App& bench, CollectiveBenchOptions& options);
bool collective_bench_parsed(const std::vector<CLI::App*>& commands);

// Spawns P workers (this executable in its hidden worker mode) on loopback
// and prints one JSON line: bench, impl, path, schedule, procs, bytes, seconds (median
// over repetitions of the slowest rank; pingpong: half the round trip),
// min_seconds, algbw_gbps (bytes / seconds) and exact. In worker mode it
// runs one rank instead.
int run_collective_bench(const CollectiveBenchOptions& options);

}  // namespace gossipd::daemon
