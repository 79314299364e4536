#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/config/cli.h"  // CLI::App, declared

namespace gossipd::daemon {

// What `gossipctl tune` was asked to do (flags: tune_flags.cc).
struct TuneOptions {
  int workers = 8;
  std::vector<int> groups{1, 2, 4, 8};         // compute-group counts to try, each dividing `workers`
  std::vector<double> lrs{0.2, 0.05, 0.0125};  // the smallest g's learning rates
  std::vector<double> momenta{0.9, 0.6, 0.3, 0.0};
  std::string model = "mlp";
  std::vector<int> hidden;
  size_t batch = 64;
  double target_loss = -1;  // one of the two goals is given
  double target_accuracy = -1;
  double budget_s = 600;    // wall time all probes together may take
  int epochs = 15;          // the longest any run trains (the schedule's length)
  int evals_per_epoch = 4;  // the goal's resolution
  uint64_t seed = 1;
  size_t train_limit = 0;
  size_t test_limit = 0;
  std::string data;
  int threads = 1;
  std::string out;
  std::string gossipd;
  bool netns = false;
  std::string bandwidth;
  int delay_ms = 0;
};

CLI::App* add_tune_command(CLI::App& app, TuneOptions& options);

// Omnivore's optimizer over compute groups: probe runs of `groups` x
// learning rate x momentum (cold start: the smallest g's learning rates at
// the largest momentum, then momentum x {best lr, best lr / 10} for each
// larger g, no momentum above the previous g's best), each run until the
// goal or until it can no longer beat the best so far; the configuration
// with the least predicted time (seconds per step x steps to the goal) is
// run to the goal; OUT/tune.json, report.md, report.html and curves.svg
// show every probe, the prediction and the outcome. Returns 1 with one line
// (and the report) when no probe reached the goal within the budget.
int run_tune(const TuneOptions& options);

}  // namespace gossipd::daemon
