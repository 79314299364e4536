#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace gossipd::daemon {

// gossipctl plan sparse: the words per product, the most one process sends
// and the load imbalance of each neuron partitioner at P processes.
struct PlanSparseOptions {
  uint32_t neurons = 1024;
  uint32_t layers = 120;
  uint32_t procs = 4;
  std::string dir;       // read the network from the challenge's files here; empty: generate it
  uint64_t shuffle = 0;  // renumber the neurons with this seed first; 0: as they are
  double imbalance = 1.05;
  uint64_t seed = 1;
  std::string write_partitions;  // DIR: write each partition there as PARTITIONER-pP.partition
  bool json = false;
};

CLI::App* add_plan_sparse(CLI::App& plan, PlanSparseOptions& o);
int run_plan_sparse(const PlanSparseOptions& o);

}  // namespace gossipd::daemon
