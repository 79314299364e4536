#include "daemon/ctl/compare_flags.h"

#include <CLI/CLI.hpp>

#include "daemon/config/mode_flags.h"
#include "daemon/config/run_options.h"
#include "daemon/ctl/compare_byzantine.h"
#include "daemon/ctl/compare_entry.h"
#include "daemon/ctl/compare_hosts.h"
#include "daemon/ctl/compare_presets.h"
#include "daemon/ctl/compare_stragglers.h"
#include "daemon/worker/mode_set.h"
#include "trainer/models.h"

// The flags of `gossipctl compare`, and those it shares with `gossipctl tune`.
namespace gossipd::daemon {
namespace {

// --algos' help: every entry the registry offers (a mode says what its
// argument means in add_compare_flags, with ModeFlags::describe).
std::string algos_help(const ModeSet& modes) {
  std::string offered;
  for (const auto& m : modes.all())
    if (!m->entry_syntax().empty()) offered += (offered.empty() ? "" : ", ") + m->entry_syntax();
  return "Protocols to run, in order, each one of: " + offered;
}

}  // namespace

void add_run_flags(CLI::App* cmd, CompareOptions& o, int max_workers) {
  cmd->add_option("--workers", o.workers, "gossipd processes per run")
      ->check(CLI::Range(1, max_workers))
      ->capture_default_str();
  cmd->add_option("--model", o.model, "Model")
      ->check(CLI::IsMember(trainer::model_names()))
      ->capture_default_str();
  cmd->add_option("--hidden", o.hidden, "Hidden dense widths, e.g. 2048,2048,2048 (default: the model's)")
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--epochs", o.epochs,
                  "Epochs of data per worker (the learning-rate schedule's length; tune: the longest run)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--batch", o.batch, "Batch size per worker")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed for model, data split and topology")->capture_default_str();
  cmd->add_option("--train-limit", o.train_limit, "Use only the first N training samples (0: all)")
      ->capture_default_str();
  cmd->add_option("--test-limit", o.test_limit, "Use only the first N test samples (0: all)")
      ->capture_default_str();
  cmd->add_option("--data", o.data, "Fashion-MNIST directory (default: the Debian package's)");
  cmd->add_option(
         "--evals-per-epoch", o.evals_per_epoch,
         "Test-set evaluations per epoch (gossipd run --evals-per-epoch): the resolution of the time to a "
         "target and of the curves")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--threads", o.threads, "OpenBLAS threads per worker")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--out", o.out, "Directory for every run's metrics, the plots and the report")->required();
  cmd->add_option("--gossipd", o.gossipd, "The gossipd binary (default: next to gossipctl)");
  cmd->add_option("--delay-ms", o.delay_ms, "Latency added to every message, in the workers' transport")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  cmd->add_flag("--netns", o.netns, "One network namespace per worker on a private bridge (root)");
  cmd->add_option("--bandwidth", o.bandwidth, "With --netns: cap every host's link, e.g. 100mbit (tc tbf)")
      ->check(
          [](const std::string& v) { return is_tc_rate(v) ? std::string() : "use a tc rate like 100mbit"; });
  cmd->add_option("--topology", o.topology,
                  "With --netns: a WAN topology file (regions, each link's delay, jitter, loss and rate; "
                  "daemon/config/wan_topology.h); --workers is its host count");
  cmd->add_option(
         "--send-buffer-kb", o.send_buffer_kb,
         "gossipd run --send-buffer-kb for every worker; 0: ~5 ms of --bandwidth when given, else the "
         "daemon's default")
      ->check(CLI::Range(0, RunOptions::kMaxSendBufferKb))
      ->capture_default_str();
}

CLI::App* add_compare_command(CLI::App& app, CompareOptions& o) {
  CLI::App* cmd =
      app.add_subcommand("compare", "Train with each protocol in turn on local workers and report");
  add_compare_flags(cmd, o, kMaxCompareWorkers);
  add_step_delays_flag(cmd, o);
  return cmd;
}

void add_compare_flags(CLI::App* cmd, CompareOptions& o, int max_workers) {
  add_run_flags(cmd, o, max_workers);
  add_byzantine_flags(cmd, o);
  cmd->add_option("--algos", o.algos, algos_help(*o.modes))
      ->delimiter(',')
      ->check(CLI::Validator(compare_entry_error, "ENTRY"))
      ->capture_default_str();
  cmd->add_option("--lr", o.lr, "Learning rate (the same schedule for every protocol)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--momentum", o.momentum,
                  "Momentum for every protocol (default: each mode's own, 0.9 or its rule), or auto where a "
                  "mode has a rule of its own")
      ->check(momentum_value());
  cmd->add_option("--compress", o.compress,
                  "How every protocol's exchanges travel: none, fp16, bf16, int8 or int8/BLOCK (values per "
                  "scale), for every protocol alike; or per protocol, ALGO=CODEC,... (the bare value for "
                  "those not named: int8," +
                      std::string(kDefaultMode) + "=none)")
      ->capture_default_str();
  cmd->add_option("--local-steps", o.local_steps,
                  "Exchange every H-th step, local steps between (gossipd run --local-steps): H for every "
                  "protocol, or per protocol as for --compress (ALGO=H,...)")
      ->capture_default_str();
  cmd->add_option("--outer-momentum", o.outer_momentum,
                  "With --local-steps: Nesterov momentum M of an outer step on each exchange window's change "
                  "(gossipd run --outer-momentum), for every protocol or per protocol as for --compress")
      ->capture_default_str();
  cmd->add_option("--optimizer", o.optimizer, "sgd or lars (per-segment trust ratio), for every protocol")
      ->check(CLI::IsMember({"sgd", "lars"}))
      ->capture_default_str();
  cmd->add_option("--lars-eta", o.lars_eta, "LARS trust coefficient")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--warmup-epochs", o.warmup_epochs, "Linear learning-rate warm-up, in epochs")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  cmd->add_option("--segments", o.segments, "Gossip unit: fine, coarse or N")->capture_default_str();
  cmd->add_option("--segment-deadline-ms", o.segment_deadline_ms,
                  "gossipd run --segment-deadline-ms for every worker (0: the daemon's default; with "
                  "--deadline adaptive the most a round waits)")
      ->check(CLI::Range(0, 3600000))
      ->capture_default_str();
  cmd->add_option("--groups", o.groups,
                  "Crossover: hierarchical over this many groups (1: flat), or auto: groups formed from "
                  "the round trips the workers measure (gossipd run --group auto, a region a group)")
      ->transform(CLI::Validator(
          [max_workers](std::string& v) {
            if (v != "auto") return CLI::Range(1, max_workers)(v);
            v = std::to_string(kAutoGroups);
            return std::string();
          },
          "auto or 1 to " + std::to_string(max_workers)))
      ->capture_default_str();
  cmd->add_option("--target", o.target, "Accuracy whose time-to is reported")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option(
         "--preset", o.preset,
         "large-batch: global batch x1, x4, x16 with the lr scaled; scaling: 4, 8, 16 workers at a fixed "
         "global batch (--batch x 4); stragglers: equal speed, then the last two workers computing 2x "
         "slower, " +
             stragglers_labels(*o.modes) +
             " beside the protocols; byzantine: without and with a Byzantine worker (the last, or those "
             "--inject-byzantine names) sending each attack, each without and with --robust clip; wan "
             "(with --netns): the protocols on a WAN of 16 hosts in 4 regions (or --topology's), the "
             "topology written beside the report")
      ->check(CLI::IsMember({"large-batch", "scaling", "stragglers", "byzantine", "wan"}));
  // The modes' own flags for their entries (--pace, --partition, ...).
  ModeFlags mode_flags(*cmd);
  o.modes->add_compare_flags(mode_flags);
}

}  // namespace gossipd::daemon
