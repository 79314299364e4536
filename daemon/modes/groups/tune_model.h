#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "daemon/ctl/mean_curve.h"

namespace gossipd::daemon {

// gossipctl tune's model of a run, after Omnivore (Hadjis et al. 2016): the
// time to a goal is the hardware efficiency (seconds per step, measured)
// times the statistical efficiency (steps to the goal, measured). Pure
// functions of recorded curves, no processes.

// What the tuner aims at: a mean test loss at or below `value`, or a mean
// test accuracy at or above it.
struct TuneGoal {
  bool loss = true;
  double value = 0;

  double metric(const CurvePoint& p) const { return loss ? p.test_loss : p.test_accuracy; }
  bool reached(const CurvePoint& p) const { return loss ? p.test_loss <= value : p.test_accuracy >= value; }
  // Whether `a` is nearer the goal than `b`.
  bool better(double a, double b) const { return loss ? a < b : a > b; }
  std::string describe() const;  // "test loss 0.4", "test accuracy 0.87"
};

// One configuration: g compute groups (gossipd run --algo groups), the
// learning rate and the explicit momentum.
struct TuneConfig {
  size_t groups = 1;
  double lr = 0;
  double momentum = 0;
  std::string name() const;  // "g2 lr 0.05 m 0.9"
  bool operator==(const TuneConfig&) const = default;
};

// Where a curve first reaches the goal, interpolated linearly between the
// evaluation before and the one at it (the first evaluation: from step 0 and
// time 0): steps and training seconds.
struct GoalPoint {
  double steps = 0;
  double train_seconds = 0;
};
std::optional<GoalPoint> goal_point(const std::vector<CurvePoint>& curve, const TuneGoal& goal);

// Training seconds per step over the whole curve (its last evaluation); 0
// for an empty curve.
double seconds_per_step(const std::vector<CurvePoint>& curve);

// The tuner's prediction of the training time to the goal: seconds per step
// times steps to the goal; nullopt where the goal was not reached.
std::optional<double> predicted_seconds(const std::vector<CurvePoint>& curve, const TuneGoal& goal);

// The cold start's first probes: the smallest g at `momentum` (the paper's
// 0.9), one per learning rate.
std::vector<TuneConfig> first_probes(size_t groups, const std::vector<double>& lrs, double momentum);

// The probes of a larger g after the best of the previous one: momentum x
// {best lr, best lr / 10}, pruning what staleness can only make worse
// (asynchrony adds momentum: no explicit momentum above the previous g's
// best), the previous best's momentum first.
std::vector<TuneConfig> next_probes(size_t groups, const TuneConfig& previous_best,
                                    const std::vector<double>& momenta);

// The next probe over `groups` (increasing, distinct), or nullopt when the
// grid is done, given the probes run so far (`done`) and the best so far of
// each g (`best`; nullopt: none of that g ran to its end). Every g gets a
// probe before any g gets a second beyond the cold start, so a budget that
// ends the probing early has seen every g: the smallest g's cold start
// (first_probes at the largest momentum), then each larger g's first
// next_probes after the g before it, then the rest of each larger g's.
using BestOf = std::function<std::optional<TuneConfig>(size_t groups)>;
std::optional<TuneConfig> next_probe(const std::vector<size_t>& groups, const std::vector<double>& lrs,
                                     const std::vector<double>& momenta, const std::vector<TuneConfig>& done,
                                     const BestOf& best);

}  // namespace gossipd::daemon
