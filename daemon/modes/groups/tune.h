#pragma once

#include <memory>
#include <vector>

#include "daemon/config/cli.h"  // CLI::App, declared
#include "daemon/ctl/compare.h"
#include "daemon/ctl/mode_tools.h"

namespace gossipd::daemon {

// What `gossipctl tune` was asked to do (flags: tune_flags.cc). Every run
// is a compare entry "groups:G" of `run` (its workers, model, data, network;
// the flags compare_flags.h shares), with a learning rate and a momentum.
struct TuneOptions {
  TuneOptions() {
    run.workers = 8;
    run.epochs = 15;          // the longest any run trains (the schedule's length)
    run.evals_per_epoch = 4;  // the goal's resolution
  }
  CompareOptions run;
  std::vector<int> groups{1, 2, 4, 8};         // compute-group counts to try, each dividing run.workers
  std::vector<double> lrs{0.2, 0.05, 0.0125};  // the smallest g's learning rates
  std::vector<double> momenta{0.9, 0.6, 0.3, 0.0};
  double target_loss = -1;  // one of the two goals is given
  double target_accuracy = -1;
  double budget_s = 600;  // wall time all probes together may take
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

// The compute groups' gossipctl commands (the tools registry, daemon/modes/tools.cc).
std::unique_ptr<ModeTools> make_groups_tools();

}  // namespace gossipd::daemon
