#include "daemon/worker/groups_mode.h"

#include <CLI/CLI.hpp>
#include <cstdio>

#include "daemon/config/cli.h"
#include "daemon/worker/groups_worker.h"

namespace gossipd::daemon {
namespace {

// Compute groups (--compute-groups): data parallel, synchronous inside a
// group, asynchronous between groups; no joiners (the groups are the
// initial members').
class GroupsMode : public Mode {
 public:
  std::string name() const override { return "groups"; }
  std::string summary() const override {
    return "Compute groups: AllReduce-SGD inside each of g groups (--compute-groups), Crossover-SGD between "
           "groups in the background, no group waiting for another";
  }

  void add_flags(ModeFlags& f) override {
    f.option("--compute-groups", flags_.compute_groups,
             "--algo groups: g compute groups of N/g workers (g divides N; rank r, members sorted by id, "
             "is in group r / (N/g)): gradients allreduced inside a group every step, models exchanged "
             "between groups in the background (Crossover-SGD), never waiting for another group")
        ->check(CLI::Range(size_t{1}, size_t{4096}));
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
    return l;
  }
  std::string entry_syntax() const override { return "groups:G"; }

  bool accepts_joins() const override { return false; }
  void check_model(const RunOptions&, size_t members, const trainer::Model&) const override {
    check_groups(flags_, members);
  }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override {
    return make_groups_worker(c, flags_);
  }
  std::vector<std::string> final_report(const proto::Status& s) const override;

 private:
  GroupsFlags flags_;
};

std::vector<std::string> GroupsMode::final_report(const proto::Status& s) const {
  if (!s.has_groups()) return {};
  const proto::GroupsStatus& g = s.groups();
  char line[400];
  std::snprintf(line, sizeof(line),
                "compute group %u of %u: %llu segments folded in (staleness mean %.2f, max %lld steps), %llu "
                "superseded, %llu sends skipped, momentum %.3f (fitted to its updates %.3f)",
                g.group(), g.groups(), static_cast<unsigned long long>(g.segments_folded()),
                g.staleness_mean(), static_cast<long long>(g.staleness_max()),
                static_cast<unsigned long long>(g.segments_superseded()),
                static_cast<unsigned long long>(g.segments_skipped()), g.momentum(), g.fitted_momentum());
  return {line};
}

}  // namespace

std::unique_ptr<Mode> make_groups_mode() { return std::make_unique<GroupsMode>(); }

}  // namespace gossipd::daemon
