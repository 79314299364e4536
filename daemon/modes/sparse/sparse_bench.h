#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace gossipd::daemon {

// gossipctl bench sparse DIR: the challenge's inference on the network in
// DIR, row-parallel over P local processes (daemon/modes/sparse/row_inference.h),
// on loopback or each in a network namespace of its own (--netns, with an
// optional --bandwidth cap per host: compare_hosts' NetnsHosts),
// against the serial reference timed in the same run; the categories and
// the payload bytes per product are checked against the reference and the
// planner's words.
struct SparseBenchOptions {
  std::string dir;
  uint32_t neurons = 0;  // 0: the only neuronN directory in dir
  uint32_t layers = 0;   // 0: every layer file there
  size_t inputs = 0;     // 0: all
  int procs = 2;
  std::string partition = "hypergraph";  // block, random, hypergraph, or a partition file
  double imbalance = 1.05;
  uint64_t seed = 1;
  size_t block = 0;    // samples per block; 0: the inference's default
  bool train = false;  // time one training step instead of the inference
  size_t batch = 64;   // with train: samples per step (gossipd run's default)
  int reps = 3;
  int warmup = 1;
  int timeout_ms = 60000;
  std::string bind_to = "core";
  bool netns = false;     // one network namespace per process (root)
  std::string bandwidth;  // with netns: every host's link cap, a tc rate
  // Hidden worker mode: the partition and the categories the parent wrote.
  int worker_rank = -1;
  std::string partition_file;
  std::string categories_file;
  std::string worker_netns;               // the namespace the worker enters, "" for none
  std::string worker_host = "127.0.0.1";  // the address it binds
};

CLI::App* add_sparse_bench(CLI::App& bench, SparseBenchOptions& o);
// Exit 0 when every process gave the reference's categories and moved the
// planned bytes; 1 when not (said on stderr).
int run_sparse_bench(const SparseBenchOptions& o);

}  // namespace gossipd::daemon
