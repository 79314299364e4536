#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/config/per_worker.h"
#include "daemon/config/wan_topology.h"
#include "daemon/ctl/compare_entry.h"
#include "daemon/worker/mode_set.h"
#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// CompareOptions::groups for `--groups auto`: every worker runs
// `--hierarchical --group auto` and the groups come from round trips.
inline constexpr int kAutoGroups = 0;

// What `gossipctl compare` was asked to do (flags: compare_flags.cc).
struct CompareOptions {
  int workers = 4;
  std::vector<std::string> algos = default_compare_entries();
  std::string model = "mlp";
  std::vector<int> hidden;  // empty: the model's default widths
  int epochs = 3;
  size_t batch = 64;
  float lr = 0.05f;
  std::string momentum;              // --momentum for every entry; "": each mode's default
  std::string compress = "none";     // --compress: a codec for every entry, or per protocol (EntryContext)
  std::string local_steps = "1";     // --local-steps: likewise
  std::string outer_momentum = "0";  // --outer-momentum: likewise
  std::string optimizer = "sgd";     // sgd | lars (gossipd run --optimizer)
  float lars_eta = 0.001f;
  float warmup_epochs = 0.0f;
  std::string segments = "fine";
  int groups =
      1;  // > 1: crossover runs hierarchical over this many --group labels; kAutoGroups: --group auto
  uint64_t seed = 1;
  size_t train_limit = 0;
  size_t test_limit = 0;
  std::string data;
  double target = 0.85;
  int evals_per_epoch = 1;  // the time to `target` has this resolution
  int threads = 1;          // OpenBLAS threads per worker
  std::string out;
  std::string gossipd;  // default: next to gossipctl
  // One network namespace per worker on a private bridge (root only), each
  // a "host" with its own address; `bandwidth` (tc rate, e.g. 100mbit) caps
  // every host's link in both directions.
  bool netns = false;
  std::string bandwidth;
  // With --netns: a WAN's links (compare_wan.h), from --topology FILE or
  // --preset wan's default; `wan` is it read (resolve_wan), null without.
  // gossipctl simulate models the same (its hosts on the WAN, no --netns).
  std::string topology;
  std::shared_ptr<const WanTopology> wan;
  int delay_ms = 0;             // injected in the workers' transport (the kernel has no netem)
  int segment_deadline_ms = 0;  // gossipd run --segment-deadline-ms; 0: the daemon's default
  // "w3=40,w7=40": slower workers, ms a step (compare_stragglers.h); and
  // "w6=2,w7=2": workers computing that many times slower. Typed by
  // resolve_step_delays where the command reads its flags.
  PerWorker<int> step_delays;
  PerWorker<double> step_slowdowns;
  // --emulate-step-ms 40,w6=80: every worker's (or the named ones') emulated step.
  PerWorker<int> emulated_steps;
  // "w3=scaled": Byzantine workers (compare_byzantine.h), typed by
  // resolve_byzantine; and --robust, for every entry or per protocol.
  PerWorker<std::string> byzantine;
  std::string robust = "none";
  bool evict_byzantine = false;  // gossipd run --evict-byzantine where --robust is on
  // gossipd run --send-buffer-kb for every worker of every protocol; 0: with
  // `bandwidth`, link_send_buffer_kb of it, else the daemon's default.
  int send_buffer_kb = 0;
  std::string preset;  // large-batch | scaling | stragglers | byzantine | wan (compare_presets.h)
  // The modes, holding their compare flags (--pace, --partition, ...): the
  // entries are launched as they say. Copies of the options share them.
  std::shared_ptr<ModeSet> modes = std::make_shared<ModeSet>();
  // Flags every worker is given after compare's own (gossipctl tune: --momentum, --lr-decay).
  std::vector<std::string> extra_flags;
  // Asked with an entry's metrics files and its slowest worker's round at
  // each look at the running workers: true ends the run there (every worker
  // stopped with SIGTERM; what they recorded counts as the run's).
  std::function<bool(const std::vector<std::string>& metrics_files, uint64_t round)> stop_when;
};

class NetnsHosts;

// Runs each protocol in turn as `workers` local gossipd processes with the
// same data, model, seed, batch and schedule, shows progress, and writes
// per-worker metrics, summary.json, gnuplot plots, report.md and report.html
// into `out`. Every worker is stopped (by pid) at the end, on error and on
// Ctrl-C.
int run_compare(const CompareOptions& options);

// Throws UsageError for --groups beyond --workers, or when every entry
// refuses what it was asked (a mode's flag none of them honours).
void check_compare_entries(const CompareOptions& options);

// `entry` (crossover, grid:2x2, ...) as this comparison launches it.
CompareEntry compare_entry(const CompareOptions& options, const std::string& entry);

// Throws UsageError when the runs cannot start: no gnuplot, no gossipd
// binary, --netns without root, --bandwidth without --netns.
void check_compare_setup(const CompareOptions& options);

// One entry run as compare runs it (its workers, watched, their metrics
// summed up) into OUT/<entry dir>, with no report; on `hosts` when given.
proto::CompareResult run_compare_entry(const CompareOptions& options, const std::string& entry,
                                       const NetnsHosts* hosts, std::stop_token stop);

// gossipd run's flags (what follows `gossipd run`) for worker `i` of
// `entry` as compare launches it: `endpoints` where each worker listens,
// `dir` the entry's files, `http` its --http address ("": none).
std::vector<std::string> compare_run_args(const CompareOptions& options, const std::string& entry, int i,
                                          const std::vector<std::string>& endpoints, const std::string& dir,
                                          const std::string& http);

// An entry's result before it runs: what it is and was asked (no status yet).
proto::CompareResult compare_entry_result(const CompareOptions& options, const std::string& entry);

// OUT/<entry dir>, created and emptied (a rerun of this entry only); returns it.
std::string fresh_entry_dir(const CompareOptions& options, const std::string& entry);

// summary.json's description of the run (model, workers, batch, ...), no results yet.
proto::CompareSummary compare_summary_header(const CompareOptions& options);

// The test accuracy of the mean of the workers' final parameters
// (--params-out files); -1 when one is missing.
double averaged_model_accuracy(const CompareOptions& options, const std::vector<std::string>& params_files);

// An entry that ran to its end: `res` filled from its workers' files
// (summarize_protocol, the averaged model), and its line printed.
void summarize_compare_entry(const CompareOptions& options, const std::vector<std::string>& metrics_files,
                             const std::vector<std::string>& params_files, const std::string& dir,
                             proto::CompareResult& res);

// The report's sentence on the run: the workers and `where` they ran
// (" local workers (gossipd processes over TCP loopback)"), then the model,
// data, schedule and what each protocol was given.
std::string compare_setup(const CompareOptions& options, const std::string& where);

// The samples a run trains on: Fashion-MNIST's 60,000, or --train-limit of them.
size_t compare_train_samples(const CompareOptions& options);

// The entry's per-worker --metrics-out files (OUT/<entry dir>/w<i>.jsonl).
std::vector<std::string> entry_metrics_files(const CompareOptions& options, const std::string& entry);

}  // namespace gossipd::daemon
