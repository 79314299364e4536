#pragma once

#include <string>
#include <vector>

#include "daemon/config/cli.h"  // CLI::App, declared

namespace gossipd::daemon {

struct CompareOptions {
  int workers = 4;
  std::vector<std::string> algos{"crossover", "sgp", "allreduce"};
  std::string model = "mlp";
  int epochs = 3;
  size_t batch = 64;
  float lr = 0.05f;
  std::string segments = "fine";
  int groups = 1;  // > 1: crossover runs hierarchical over this many --group labels
  uint64_t seed = 1;
  size_t train_limit = 0;
  size_t test_limit = 0;
  std::string data;
  double target = 0.85;
  int evals_per_epoch = 1;  // the time to `target` has this resolution
  int threads = 1;  // OpenBLAS threads per worker
  std::string out;
  std::string gossipd;  // default: next to gossipctl
  // One network namespace per worker on a private bridge (root only), each
  // a "host" with its own address; `bandwidth` (tc rate, e.g. 100mbit) caps
  // every host's link in both directions.
  bool netns = false;
  // Crossover and SGP pace their sends (gossipd run --pace): "on", "off", or
  // "auto": on where the links are capped (`bandwidth`), off on loopback.
  std::string pace = "auto";
  std::string bandwidth;
  int delay_ms = 0;  // injected in the workers' transport (the kernel has no netem)
  // gossipd run --send-buffer-kb for every worker of every protocol; 0: with
  // `bandwidth`, link_send_buffer_kb of it, else the daemon's default.
  int send_buffer_kb = 0;
  // The Crossover-SGD paper's two experiments at our scale:
  //  large-batch: --workers fixed, global batch x1, x4, x16 with the
  //               learning rate scaled alike (linear scaling rule);
  //  scaling:     4, 8 and 16 workers at a fixed global batch (--batch x 4).
  std::string preset;
};


CLI::App* add_compare_command(CLI::App& app, CompareOptions& options);

// Runs each protocol in turn as `workers` local gossipd processes with the
// same data, model, seed, batch and schedule, shows progress, and writes
// per-worker metrics, summary.json, gnuplot plots, report.md and report.html
// into `out`. Every worker is stopped (by pid) at the end, on error and on
// Ctrl-C.
int run_compare(const CompareOptions& options);

}  // namespace gossipd::daemon
