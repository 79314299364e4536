#include "daemon/modes/groups/groups_mode.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "daemon/config/cli.h"
#include "daemon/modes/groups/groups_status.pb.h"
#include "daemon/modes/groups/groups_worker.h"
#include "daemon/modes/groups/shard_wire.h"
#include "daemon/observe/message_json.h"
#include "daemon/worker/robust_flags.h"

namespace gossipd::daemon {
namespace {

// Compute groups (--compute-groups): data parallel, synchronous inside a
// group, asynchronous between groups through the parameter shards; no
// joiners (the groups are the initial members').
class GroupsMode : public Mode {
 public:
  std::string name() const override { return "groups"; }
  std::string summary() const override {
    return "Compute groups (Omnivore): g groups (--compute-groups) push their gradients to parameter shards "
           "every member owns, which apply them as they arrive; no group waits for another";
  }

  void add_flags(ModeFlags& f) override {
    f.describe("--segment-deadline-ms", "compute groups: an exchange between the groups");
    f.option("--compute-groups", flags_.compute_groups,
             "--algo groups: g compute groups of N/g workers (g divides N; rank r, members sorted by id, "
             "is in group r / (N/g)): every step a group reduces its gradient and pushes it to the owners "
             "of the parameter shards (one per worker), which apply each group's as it arrives; 1 is "
             "synchronous SGD, N fully asynchronous")
        ->check(CLI::Range(size_t{1}, size_t{4096}));
    f.option("--compute-group-order", flags_.order,
             "--algo groups: the members in the order the groups take them, N/g consecutive ones a group "
             "(gossipctl tune lists them by speed, so a slow member holds back only its own group); "
             "default: ids sorted");
    f.option("--target-momentum", flags_.target_momentum,
             "--algo groups --momentum auto: the total momentum (explicit + the asynchrony's implicit)")
        ->check(CLI::Range(0.0f, 0.999f))
        ->capture_default_str();
    f.option("--momentum-floor", flags_.momentum_floor,
             "--algo groups --momentum auto: the explicit momentum never goes below this (may be negative)")
        ->check(CLI::Range(-0.9f, 0.999f))
        ->capture_default_str();
    f.claim([](const RunOptions& o) { return o.train.momentum_auto; },
            "--momentum auto is for --algo groups (only compute groups add the momentum of asynchrony)");
    f.describe("--momentum",
               "auto (--algo groups, its default): --target-momentum less the momentum the asynchrony "
               "between the groups implies");
    f.flag("--group-overlap", flags_.overlap,
           "--algo groups: each step's push and pull run while the group computes the next step on the "
           "values it has (one more step of staleness); the run's last step waits for its own");
    add_compress_flags(
        f, flags_.compress,
        "groups: the compute groups' rings (gradient and fresh values) and their shard pushes and answers");
    add_robust_flags(f, flags_.robust,
                     "groups: its pushes of its slice of its group's gradient to the shards' owners");
  }
  void check_flags(const RunOptions&) const override {
    checked_codec(flags_.compress);
    check_attack(flags_.robust);
    if (flags_.robust.evict_byzantine)
      throw UsageError(
          "--evict-byzantine: compute groups take no one in or out of their groups during a run; a named "
          "pusher's pushes are refused instead (drop --evict-byzantine)");
    checked_eviction(flags_.robust);
    checked_defence(flags_.robust);
  }
  void add_compare_flags(ModeFlags& f) override {
    f.describe("--momentum", "auto: the compute groups' rule, their default (gossipd run --help)");
  }

  EntryLaunch launch(const std::string& label, const std::string& arg, const EntryContext& c) const override {
    const std::optional<size_t> g = entry_count(arg);
    if (!g)
      throw UsageError("--algos " + label + ": give the number of compute groups, groups:G, e.g. groups:2");
    if (c.workers != 0 && c.workers % *g != 0) {
      throw UsageError("--algos " + label + ": " + std::to_string(*g) + " groups do not divide --workers " +
                       std::to_string(c.workers));
    }
    EntryLaunch l = Mode::launch(label, arg, c);
    l.flags = {"--compute-groups", std::to_string(*g)};
    const std::vector<std::string> compress = compress_launch_flags(c);
    l.flags.insert(l.flags.end(), compress.begin(), compress.end());
    if (c.evict_byzantine && c.value_of("--robust", "none") != "none")
      throw UsageError("--evict-byzantine: --algos " + label +
                       ": compute groups refuse a named pusher's pushes instead; drop it");
    add_robust_launch(l, c);
    for (const auto& [k, attack] : c.byzantine) check_attack(RobustFlags{attack});
    return l;
  }
  std::unique_ptr<Replica> load(const RunOptions& o, const Placement& where) const override {
    return poisoned(Mode::load(o, where), flags_.robust);
  }
  uint32_t tag_count() const override { return kGroupsTagCount; }
  std::string entry_syntax() const override { return "groups:G"; }
  std::string stragglers_entry() const override { return "groups:2"; }
  std::string stragglers_label() const override { return "compute groups (groups:2, ranks in halves)"; }

  bool accepts_joins() const override { return false; }
  bool members_read_one_model() const override { return true; }
  void check_model(const RunOptions& o, size_t members, const trainer::Model&) const override {
    check_groups(flags_, members, o);
  }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override {
    return make_groups_worker(c, flags_, tags());
  }
  std::vector<std::string> final_report(const proto::Status& s) const override;

 private:
  // An attack aimed with what a member receives: refused in one line.
  static void check_attack(const RobustFlags& flags) {
    if (const auto a = checked_attack(flags, 0); a && protocol::attack_observes(a->kind))
      throw UsageError("--inject-byzantine " + std::string(protocol::attack_name(a->kind)) +
                       ": a compute group's member receives no one's pushes to aim it with; use sign_flip, "
                       "scaled, noise, non_finite, stale, ipm or label_flip");
  }

  GroupsFlags flags_;
};

std::vector<std::string> GroupsMode::final_report(const proto::Status& s) const {
  if (!s.mode_status().Is<proto::GroupsStatus>()) return {};
  const proto::GroupsStatus g = mode_status<proto::GroupsStatus>(s);
  char line[400];
  std::snprintf(
      line, sizeof(line),
      "compute group %u of %u: as an owner %llu pushes applied (staleness mean %.2f, max %lld), %llu "
      "repeats answered, %llu shards seeded, %llu updates lost; momentum %.3f (its shards' updates "
      "show %.3f)",
      g.group(), g.groups(), static_cast<unsigned long long>(g.pushes_applied()), g.staleness_mean(),
      static_cast<long long>(g.staleness_max()), static_cast<unsigned long long>(g.pushes_duplicate()),
      static_cast<unsigned long long>(g.shards_seeded()), static_cast<unsigned long long>(g.updates_lost()),
      g.momentum(), g.fitted_momentum());
  return {line};
}

}  // namespace

std::unique_ptr<Mode> make_groups_mode() { return std::make_unique<GroupsMode>(); }

}  // namespace gossipd::daemon
