#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/cluster/replica_state.h"
#include "daemon/config/mode_flags.h"
#include "daemon/config/run_options.h"
#include "daemon/worker/replica.h"
#include "daemon/worker/round_traffic.h"
#include "daemon/worker/worker.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

// What gossipctl compare knows when it launches an entry of a mode
// ("grid:4x2": the mode's name, then its argument).
struct EntryContext {
  size_t workers = 1;           // 0: not known (check the syntax alone)
  size_t batch = 64;            // compare's --batch: per data-parallel worker
  size_t train_samples = 0;     // the training samples the workers share
  size_t hierarchy_groups = 1;  // compare --groups: > 1 where the mode can run hierarchical
  bool auto_groups = false;     // compare --groups auto: hierarchical, groups from round trips
  bool links_capped = false;    // compare --bandwidth: every host's link is capped
  // compare's flags that may differ per protocol (config/per_protocol.h:
  // --compress, --local-steps, --outer-momentum), by name. parse_compare_entry
  // hands each mode its own values ("int8/64", "4", "0.5"); a mode that
  // takes one passes it on in its launch's flags, and compare refuses a
  // value other than the default that a mode's launch did not pass on.
  std::map<std::string, std::string> per_protocol{};
  // compare --inject-byzantine: each Byzantine worker's attack (KIND[:X]);
  // a mode that takes it adds gossipd run --inject-byzantine to that
  // worker's flags, and compare refuses it for a mode that does not.
  std::map<size_t, std::string> byzantine{};
  bool evict_byzantine = false;  // compare --evict-byzantine: with this mode's --robust on
  // per_protocol's value of `flag`, or `plain` where it has none.
  std::string value_of(const std::string& flag, const std::string& plain) const {
    const auto it = per_protocol.find(flag);
    return it == per_protocol.end() ? plain : it->second;
  }
};

// What an entry launches: its workers' --batch, the flags of the mode beyond
// --algo (all workers, then worker i's own), and what compare reports.
struct EntryLaunch {
  size_t batch = 0;
  size_t steps_per_epoch = 1;
  std::vector<std::string> flags;
  std::vector<std::vector<std::string>> per_worker;  // empty, or one list per worker
  bool paced = false;
  // A compare flag of the mode's that this entry cannot honour here ("--pace
  // on is for flat crossover and sgp: ..."): compare refuses the run with it
  // when no entry honours the flag.
  std::string unmet;
};

// One value of gossipd run --algo: everything that differs between modes is
// here, in the mode's own files, and shared code asks the mode. A mode owns
// its flags (add_flags stores them in the mode object: every mode object
// lives as long as the command that parsed them), its checks, its compare
// entry syntax and launch, how it loads what this process trains, its
// worker and its final report. Add one with a Mode of its own and one line
// in modes.cc. The defaults are data parallelism: every process trains the
// whole model on its own shard of the data.
class Mode {
 public:
  virtual ~Mode() = default;
  virtual std::string name() const = 0;
  virtual std::string summary() const = 0;  // one line, for --help

  // gossipd run's flags of this mode, stored in the mode.
  virtual void add_flags(ModeFlags& flags) { (void)flags; }
  // Sets the mode's flags from `args` ("--stages", "2", ...) as gossipd run
  // would, for a process that holds a member without a command line;
  // throws UsageError naming a flag that is not the mode's or a bad value.
  void configure(const std::vector<std::string>& args);
  // Checks of the flags alone, before any data is read (throws UsageError).
  virtual void check_flags(const RunOptions& options) const { (void)options; }
  // Whether its members are grouped by their --group labels (with its flags
  // as set); --group auto, which measures the labels, is refused where not.
  virtual bool groups_by_label() const { return false; }

  // gossipctl compare: "grid:PRxPC", as --help shows the entry; empty: not
  // offered (and `why_not_in_compare` says why).
  virtual std::string entry_syntax() const { return name(); }
  // Where gossipctl compare runs it when --algos is not given: 1 first, 0
  // only when asked for (the protocols users compare, gossip first).
  virtual int default_compare_order() const { return 0; }
  virtual std::string why_not_in_compare() const { return ""; }
  // gossipctl compare --preset stragglers: the entry this mode adds beside
  // the others where none of its own is given ("" for none; the compute
  // groups' "groups:2", the slow workers in one group).
  virtual std::string stragglers_entry() const { return ""; }
  // How the preset's description names that entry.
  virtual std::string stragglers_label() const { return stragglers_entry(); }
  // gossipctl compare's flags for this mode's entries, stored in the mode
  // (its launch reads them); a name two modes add is one flag.
  virtual void add_compare_flags(ModeFlags& flags) { (void)flags; }
  // The entry `name[:arg]` (arg empty without a colon) on `c.workers`
  // processes (0: not known yet, the syntax alone); throws UsageError
  // naming the entry and what it may be.
  virtual EntryLaunch launch(const std::string& label, const std::string& arg, const EntryContext& c) const;

  // What this process trains: the trainer over its model (or share), or the
  // mode's own kind of replica (throws UsageError for what does not fit).
  virtual std::unique_ptr<Replica> load(const RunOptions& options, const Placement& where) const;
  // The mode's checks once the members and the model are known (throws
  // UsageError); load_trained calls it before reading any data.
  virtual void check_model(const RunOptions& options, size_t members, const trainer::Model& model) const {
    (void)options, (void)members, (void)model;
  }
  // Steps per epoch, the same on every process of the cluster.
  virtual size_t steps_per_epoch(const RunOptions& options, size_t samples, size_t members,
                                 size_t batch) const;
  // Whether the Python module may host it (gossipd.torch: the host computes
  // the whole model, the mode averages what it computed): data parallel over
  // whole replicas.
  virtual bool hostable() const { return false; }
  // Why a hostable mode cannot be hosted with the flags given (empty: it can).
  virtual std::string why_not_hosted() const { return ""; }
  // Whether a host's optimizer state travels with its parameters by
  // default (gossipd.torch's average_state): where averaging it measured
  // better (python/README.md).
  virtual bool host_averages_state() const { return false; }
  // Whether a step that failed under a member's death is taken again once
  // the mode has recovered (AllReduce-SGD re-forms its ring and retries): a
  // host's gradients of that step must then be kept for the retry.
  virtual bool retries_failed_steps() const { return false; }
  // Whether a worker may enter a running cluster (--join), and the name a
  // joiner's mode must have (a variant of the mode is another name).
  virtual bool accepts_joins() const { return true; }
  virtual std::string join_name() const { return name(); }
  // Whether a joiner's state shares are cut on segment boundaries (a
  // per-segment weight that one donor must send whole, as SGP's push-sum
  // weights; daemon/cluster/state_share.h).
  virtual bool shares_on_segments() const { return false; }
  // The model a downloaded state holds, into `params` (default: its
  // parameters as they are; SGP's are numerators over its weights).
  virtual void model_in_state(const ReplicaState& state, const protocol::SegmentTable& segments,
                              std::span<float> params) const;
  // Whether it writes checkpoints (--checkpoint-dir), and what a checkpoint
  // of this process holds.
  virtual bool writes_checkpoints() const { return true; }
  virtual StateLayout state_layout(const RunOptions& options, const Placement& where,
                                   const Replica& replica) const;
  // Every member holds the one model exactly (no consensus distance, no
  // gossip bytes to report): AllReduce-SGD, the grid.
  virtual bool one_replica() const { return false; }
  // Every member reads the one model that owners update as they go (compute
  // groups): an evaluation is of that model when it ran, so the run's curve
  // is its members' evaluations in order of time (model_curve), not their
  // means at each progress, which would wait for the slowest member.
  virtual bool members_read_one_model() const { return false; }
  virtual std::unique_ptr<Worker> make_worker(WorkerContext& context) const = 0;
  // gossipctl simulate's time model: what a round of this mode sends
  // between the members (round_traffic.h), with its flags as configured;
  // nullptr: the mode is not modelled (simulate refuses it in time).
  virtual std::unique_ptr<RoundTraffic> traffic(const TrafficContext& context) const {
    (void)context;
    return nullptr;
  }
  // The model evaluations run on in the background (a copy of the
  // parameters goes in it); nullptr: on the training thread.
  virtual std::unique_ptr<trainer::Model> eval_model(const RunOptions& options) const;
  // Lines of its own for the end of a run (after the counters); none by default.
  virtual std::vector<std::string> final_report(const proto::Status& status) const {
    (void)status;
    return {};
  }

  // Its own collective tags: how many it needs (0: none beyond the shared
  // users of protocol/wire/tags.h), and the range the registry laid out for it in
  // the modes' block (ModeSet, in registry order: every process of a
  // cluster runs the same registry, so they agree). make_worker passes it
  // on to what the worker builds.
  virtual uint32_t tag_count() const { return 0; }
  protocol::tags::Range tags() const { return tags_; }
  void set_tags(protocol::tags::Range tags) { tags_ = tags; }

 protected:
  // The data-parallel load: the whole model, the member's shard of the data.
  std::unique_ptr<Replica> load_trained(const RunOptions& options, const Placement& where,
                                        std::unique_ptr<trainer::Model> model,
                                        trainer::SamplerOptions sampler) const;

 private:
  protocol::tags::Range tags_{0, 0};
};

// The initial members split the data into shards; a joiner samples the
// whole set, with a stream of its own.
trainer::SamplerOptions shard_per_member(const RunOptions& options, const Placement& where);
// Every member makes the same number of steps: the data over the members, in batches.
size_t data_parallel_steps(size_t samples, size_t members, size_t batch);
// The whole model as --model, --hidden and --seed make it.
std::unique_ptr<trainer::Model> whole_model(const RunOptions& options);
// The model's segments as --segments cuts them; throws UsageError for one
// larger than --max-message-bytes allows.
protocol::SegmentTable checked_segment_table(const RunOptions& options, const trainer::Model& model);
// A checkpoint holds the trainer's whole model and optimizer state.
StateLayout whole_state(const trainer::Trainer& trainer);
// The entry's argument as a count >= 1 ("groups:2"); nullopt when it is not one.
std::optional<size_t> entry_count(const std::string& arg);

}  // namespace gossipd::daemon
