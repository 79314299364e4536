#include <CLI/CLI.hpp>

#include "daemon/ctl/compare_flags.h"
#include "daemon/ctl/compare_stragglers.h"
#include "daemon/modes/groups/tune.h"

// The flags of `gossipctl tune`.
namespace gossipd::daemon {

namespace {

// A list's check that names an empty list ("" would parse as a 0).
CLI::Validator not_empty(const CLI::Validator& v, const std::string& flag) {
  return CLI::Validator(
      [v, flag](std::string& s) {
        return s.empty() ? "the tuner's grid is empty: give " + flag + " at least one value" : v(s);
      },
      v.get_description());
}

void add_grid_flags(CLI::App* cmd, TuneOptions& o) {
  cmd->add_option("--groups", o.groups, "Compute-group counts g to probe, each dividing --workers")
      ->delimiter(',')
      ->check(not_empty(CLI::Range(1, 4096), "--groups"))
      ->capture_default_str();
  cmd->add_option("--lrs", o.lrs,
                  "Learning rates probed at the smallest g (larger g: the best and a tenth of it)")
      ->delimiter(',')
      ->check(not_empty(CLI::PositiveNumber, "--lrs"))
      ->capture_default_str();
  cmd->add_option("--momenta", o.momenta,
                  "Explicit momenta probed at larger g (the smallest g: the largest of them)")
      ->delimiter(',')
      ->check(not_empty(CLI::Range(0.0, 0.999), "--momenta"))
      ->capture_default_str();
  cmd->add_option("--target-loss", o.target_loss, "The goal: a mean test loss at or below this")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--target-accuracy", o.target_accuracy, "The goal: a mean test accuracy at or above this")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--budget-s", o.budget_s, "Wall time the probes may take together, seconds")
      ->check(CLI::Range(1.0, 1e7))
      ->capture_default_str();
}

}  // namespace

CLI::App* add_tune_command(CLI::App& app, TuneOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "Pick compute groups, learning rate and momentum from probe runs (Omnivore's optimizer), run it");
  add_run_flags(cmd, o.run);
  add_step_delays_flag(cmd, o.run);
  add_grid_flags(cmd, o);
  return cmd;
}

std::unique_ptr<ModeTools> make_groups_tools() {
  return std::make_unique<OneCommandTools<TuneOptions>>(
      [](ToolParents& parents, TuneOptions& o) { return add_tune_command(parents.app, o); }, run_tune);
}

}  // namespace gossipd::daemon
