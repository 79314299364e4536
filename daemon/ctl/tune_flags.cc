#include <CLI/CLI.hpp>

#include "daemon/ctl/compare_hosts.h"
#include "daemon/ctl/tune.h"
#include "trainer/models.h"

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
  cmd->add_option("--workers", o.workers, "gossipd processes per run")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  add_grid_flags(cmd, o);
  cmd->add_option("--model", o.model, "Model")
      ->check(CLI::IsMember(trainer::model_names()))
      ->capture_default_str();
  cmd->add_option("--hidden", o.hidden, "Hidden dense widths (default: the model's)")
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--batch", o.batch, "Batch size per worker")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cmd->add_option("--epochs", o.epochs, "Longest run, in epochs (the learning-rate schedule's length)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--evals-per-epoch", o.evals_per_epoch, "Test evaluations per epoch: the goal's resolution")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed for model, data split and topology")->capture_default_str();
  cmd->add_option("--train-limit", o.train_limit, "Use only the first N training samples (0: all)");
  cmd->add_option("--test-limit", o.test_limit, "Use only the first N test samples (0: all)");
  cmd->add_option("--data", o.data, "Fashion-MNIST directory (default: the Debian package's)");
  cmd->add_option("--threads", o.threads, "OpenBLAS threads per worker")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--out", o.out, "Directory for every run's metrics, tune.json, the plot and the report")
      ->required();
  cmd->add_option("--gossipd", o.gossipd, "The gossipd binary (default: next to gossipctl)");
  cmd->add_flag("--netns", o.netns, "One network namespace per worker on a private bridge (root)");
  cmd->add_option("--bandwidth", o.bandwidth, "With --netns: cap every host's link, e.g. 100mbit (tc tbf)")
      ->check(
          [](const std::string& v) { return is_tc_rate(v) ? std::string() : "use a tc rate like 100mbit"; });
  cmd->add_option("--delay-ms", o.delay_ms, "Latency added to every message, in the workers' transport")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  return cmd;
}

}  // namespace gossipd::daemon
