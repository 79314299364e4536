#include "daemon/modes/groups/tune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare.h"
#include "daemon/ctl/compare_byzantine.h"
#include "daemon/ctl/compare_entry.h"
#include "daemon/ctl/compare_hosts.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/ctl/compare_stragglers.h"
#include "daemon/modes/groups/tune_model.h"
#include "daemon/modes/groups/tune_report.h"
#include "daemon/modes/groups/tune_speeds.h"

// gossipctl tune: the probes, the choice and the run of it.
namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kNever = std::numeric_limits<double>::infinity();

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string entry_of(size_t groups) { return "groups:" + std::to_string(groups); }

TuneGoal goal_of(const TuneOptions& o) {
  return o.target_loss >= 0 ? TuneGoal{true, o.target_loss} : TuneGoal{false, o.target_accuracy};
}

// Every run's compare options but the configuration's own.
CompareOptions base_options(const TuneOptions& o) {
  CompareOptions c = o.run;
  c.target = o.target_accuracy >= 0 ? o.target_accuracy : 1.0;
  return c;
}

class Tuner {
 public:
  Tuner(const TuneOptions& o, const NetnsHosts* hosts, std::stop_token stop)
      : o_(o), goal_(goal_of(o)), base_(base_options(o)), hosts_(hosts), stop_(stop) {
    summary_.set_workers(static_cast<uint32_t>(o.run.workers));
    summary_.set_model(o.run.model);
    summary_.set_goal(goal_.describe());
    summary_.set_budget_seconds(o.budget_s);
    summary_.set_chosen(-1);
  }

  // The probes, every g in turn (next_probe).
  void probe() {
    std::vector<size_t> groups(o_.groups.begin(), o_.groups.end());
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    start_ = Clock::now();
    summary_.set_stopped(probe_groups(groups));
    summary_.set_tuning_seconds(seconds_since(start_));
  }

  // The least predicted time, run to the goal; false when no probe reached it.
  bool run_choice() {
    int chosen = -1;
    for (int i = 0; i < summary_.probes_size(); ++i) {
      const auto& p = summary_.probes(i);
      if (p.predicted_seconds() >= 0 &&
          (chosen < 0 || p.predicted_seconds() < summary_.probes(chosen).predicted_seconds()))
        chosen = i;
    }
    summary_.set_chosen(chosen);
    if (chosen < 0 || stop_.stop_requested()) return false;
    const auto& c = summary_.probes(chosen);
    std::printf("gossipctl tune: running %s to the goal (predicted %.1f s of training)\n", c.name().c_str(),
                c.predicted_seconds());
    std::fflush(stdout);
    *summary_.mutable_outcome() = run({c.groups(), c.lr(), c.momentum()}, "final", false);
    return true;
  }

  proto::TuneSummary& summary() { return summary_; }
  const TuneGoal& goal() const { return goal_; }

 private:
  // The probes in next_probe's order until the grid is done, the budget
  // spent or a signal came.
  std::string probe_groups(const std::vector<size_t>& groups) {
    std::vector<TuneConfig> done;
    const BestOf best = [this](size_t g) { return best_of(g); };
    while (const auto c = next_probe(groups, o_.lrs, o_.momenta, done, best)) {
      if (stop_.stop_requested()) return "signal";
      if (seconds_since(start_) >= o_.budget_s) return "budget";
      char dir[64];
      std::snprintf(dir, sizeof dir, "probes/%02d-g%zu-lr%g-m%g", summary_.probes_size() + 1, c->groups,
                    c->lr, c->momentum);
      *summary_.add_probes() = run(*c, dir, true);
      done.push_back(*c);
    }
    return "grid done";
  }

  // Of g's probes that ran to their end: the least predicted time, else the
  // nearest to the goal.
  std::optional<TuneConfig> best_of(size_t groups) const {
    const proto::TuneRun* best = nullptr;
    for (const auto& p : summary_.probes()) {
      if (p.groups() != groups || p.status() != "ok") continue;
      const bool better =
          !best ||
          (p.predicted_seconds() >= 0
               ? best->predicted_seconds() < 0 || p.predicted_seconds() < best->predicted_seconds()
               : best->predicted_seconds() < 0 && goal_.better(p.final_metric(), best->final_metric()));
      if (better) best = &p;
    }
    if (!best) return std::nullopt;
    return TuneConfig{groups, best->lr(), best->momentum()};
  }

  double best_predicted() const {
    double best = kNever;
    for (const auto& p : summary_.probes()) {
      if (p.predicted_seconds() >= 0) best = std::min(best, p.predicted_seconds());
    }
    return best;
  }

  proto::TuneRun run(const TuneConfig& c, const std::string& dir, bool probe);

  // The members' speeds from the first synchronous probe (tune_speeds.h):
  // every later run of g > 1 takes them in that order.
  void learn_speeds(const std::vector<std::string>& files) {
    const MemberSpeeds s = member_speeds(files);
    for (double ms : s.compute_ms) summary_.add_compute_ms(ms);
    summary_.set_group_order(order_flag(s));
    size_t largest = 1;
    for (int g : o_.groups) largest = std::max(largest, static_cast<size_t>(g));
    summary_.set_speeds(describe_speeds(s, std::min<size_t>(largest, 2)));
    std::printf("gossipctl tune: %s\n", summary_.speeds().c_str());
    std::fflush(stdout);
  }

  const TuneOptions& o_;
  TuneGoal goal_;
  CompareOptions base_;
  const NetnsHosts* hosts_;
  std::stop_token stop_;
  Clock::time_point start_ = Clock::now();
  proto::TuneSummary summary_;
};

// One configuration's run into OUT/dir: a probe ends at the goal, once it
// cannot beat the best so far, or when the budget is spent; the final run
// at the goal. Either ends at --epochs.
proto::TuneRun Tuner::run(const TuneConfig& c, const std::string& dir, bool probe) {
  CompareOptions co = base_;
  co.out = o_.run.out + "/" + dir;
  co.lr = static_cast<float>(c.lr);
  co.extra_flags = {"--momentum", format("%g", c.momentum)};
  std::string stopped = "epochs";
  const double best = best_predicted();
  const bool learns_speeds = c.groups == 1 && summary_.speeds().empty();
  co.stop_when = [&](const std::vector<std::string>& files, uint64_t) {
    std::vector<std::vector<proto::EpochRecord>> workers;
    for (const auto& f : files) workers.push_back(read_epoch_records(f));
    if (learns_speeds && !every_member_timed(workers)) return false;
    const auto curve = model_curve(workers);
    if (goal_point(curve, goal_))
      stopped = "goal";
    else if (probe && !curve.empty() && curve.back().train_seconds > best)
      stopped = "cannot win";
    else if (probe && seconds_since(start_) >= o_.budget_s)
      stopped = "budget";
    else
      return false;
    return true;
  };
  const auto t0 = Clock::now();
  if (c.groups > 1 && !summary_.group_order().empty())
    co.extra_flags.insert(co.extra_flags.end(), {"--compute-group-order", summary_.group_order()});
  const proto::CompareResult res = run_compare_entry(co, entry_of(c.groups), hosts_, stop_);
  if (learns_speeds && res.status() == "ok") learn_speeds(entry_metrics_files(co, entry_of(1)));
  proto::TuneRun r;
  r.set_name(c.name());
  r.set_groups(static_cast<uint32_t>(c.groups));
  r.set_lr(c.lr);
  r.set_momentum(c.momentum);
  r.set_dir(dir + "/" + entry_dir(entry_of(c.groups)));
  if (c.groups > 1) r.set_group_order(summary_.group_order());
  r.set_wall_seconds(seconds_since(t0));
  r.set_status(res.status());
  r.set_stopped(res.status() == "stopped by signal" ? "signal" : stopped);
  const auto curve = model_curve(entry_metrics_files(co, entry_of(c.groups)));
  if (r.stopped() != "signal" && goal_point(curve, goal_))
    r.set_stopped("goal");  // reached after the look that stopped it
  write_goal_curve(o_.run.out + "/" + r.dir() + "/goal.dat", curve, goal_);
  fill_run(r, curve, goal_);
  print_run(probe ? summary_.probes_size() + 1 : 0, r, goal_);
  return r;
}

void validate(const TuneOptions& o) {
  if (o.groups.empty() || o.lrs.empty() || o.momenta.empty())
    throw UsageError("the tuner's grid is empty: give --groups, --lrs and --momenta at least one value each");
  if ((o.target_loss >= 0) == (o.target_accuracy >= 0))
    throw UsageError("give the goal as exactly one of --target-loss and --target-accuracy");
  for (int g : o.groups) {
    if (o.run.workers % g != 0) {
      throw UsageError("--groups " + std::to_string(g) + ": " + std::to_string(g) +
                       " groups do not divide --workers " + std::to_string(o.run.workers));
    }
  }
  if (std::filesystem::exists(o.run.out + "/tune.json"))
    throw UsageError(o.run.out + " already holds a tuning (tune.json): choose another --out or move it away");
}

}  // namespace

int run_tune(const TuneOptions& given) {
  TuneOptions o = given;
  resolve_step_delays(o.run);
  resolve_byzantine(o.run);
  if (!o.run.topology.empty())
    throw UsageError(
        "gossipctl tune does not run on a WAN topology yet: run it with gossipctl compare --netns");
  validate(o);
  std::stop_source stop;
  SignalWatcher signals(stop);
  check_compare_setup(base_options(o));
  prepare_out_dir(o.run.out);
  std::unique_ptr<NetnsHosts> hosts;
  if (o.run.netns) hosts = std::make_unique<NetnsHosts>(o.run.workers, o.run.bandwidth);
  Tuner t(o, hosts.get(), stop.get_token());
  t.summary().set_setup(tune_setup(o));
  t.probe();
  const bool ran = t.run_choice();
  write_tune_report(o.run.out, t.summary(), t.goal());
  if (stop.stop_requested()) return kExitFailure;
  if (!ran) throw DaemonError(no_goal_line(t.summary(), t.goal()));
  std::printf("gossipctl tune: report in %s/report.md and %s/report.html (tune.json, curves.svg)\n",
              o.run.out.c_str(), o.run.out.c_str());
  return kExitOk;
}

}  // namespace gossipd::daemon
