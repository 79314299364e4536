#include "daemon/modes/groups/tune_model.h"

#include <algorithm>
#include <cstdio>

namespace gossipd::daemon {
namespace {

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

}  // namespace

std::string TuneGoal::describe() const {
  std::string s = loss ? "test loss " : "test accuracy ";
  s.append(number(value));
  return s;
}

std::string TuneConfig::name() const {
  std::string s = "g";
  s.append(std::to_string(groups)).append(" lr ").append(number(lr)).append(" m ").append(number(momentum));
  return s;
}

std::optional<GoalPoint> goal_point(const std::vector<CurvePoint>& curve, const TuneGoal& goal) {
  CurvePoint before;  // step 0, time 0; its metric: the first evaluation's, so no interpolation there
  for (size_t i = 0; i < curve.size(); ++i) {
    const CurvePoint& p = curve[i];
    if (!goal.reached(p)) {
      before = p;
      continue;
    }
    const double a = i == 0 ? goal.metric(p) : goal.metric(before), b = goal.metric(p);
    const double f = a == b ? 1.0 : std::clamp((goal.value - a) / (b - a), 0.0, 1.0);
    const auto lerp = [f](double x, double y) { return x + f * (y - x); };
    return GoalPoint{lerp(static_cast<double>(before.round), static_cast<double>(p.round)),
                     lerp(before.train_seconds, p.train_seconds)};
  }
  return std::nullopt;
}

double seconds_per_step(const std::vector<CurvePoint>& curve) {
  if (curve.empty() || curve.back().round == 0) return 0;
  return curve.back().train_seconds / static_cast<double>(curve.back().round);
}

std::optional<double> predicted_seconds(const std::vector<CurvePoint>& curve, const TuneGoal& goal) {
  const auto at = goal_point(curve, goal);
  if (!at) return std::nullopt;
  return at->steps * seconds_per_step(curve);
}

std::vector<TuneConfig> first_probes(size_t groups, const std::vector<double>& lrs, double momentum) {
  std::vector<TuneConfig> probes;
  for (double lr : lrs) probes.push_back({groups, lr, momentum});
  return probes;
}

std::vector<TuneConfig> next_probes(size_t groups, const TuneConfig& previous_best,
                                    const std::vector<double>& momenta) {
  std::vector<double> kept;
  for (double m : momenta) {
    if (m <= previous_best.momentum) kept.push_back(m);
  }
  std::sort(kept.begin(), kept.end(), [](double a, double b) { return a > b; });
  std::vector<TuneConfig> probes;
  for (double lr : {previous_best.lr, previous_best.lr / 10}) {
    for (double m : kept) probes.push_back({groups, lr, m});
  }
  return probes;
}

std::optional<TuneConfig> next_probe(const std::vector<size_t>& groups, const std::vector<double>& lrs,
                                     const std::vector<double>& momenta, const std::vector<TuneConfig>& done,
                                     const BestOf& best) {
  if (groups.empty() || lrs.empty() || momenta.empty()) return std::nullopt;
  const auto fresh = [&](const TuneConfig& c) {
    return std::find(done.begin(), done.end(), c) == done.end();
  };
  const auto cold = first_probes(groups[0], lrs, *std::max_element(momenta.begin(), momenta.end()));
  for (const TuneConfig& c : cold) {
    if (fresh(c)) return c;
  }
  // Each larger g's probes after the best of the g before it (the cold
  // start's first where none of that g ended).
  std::vector<std::vector<TuneConfig>> larger;
  TuneConfig previous = best(groups[0]).value_or(cold.front());
  for (size_t k = 1; k < groups.size(); ++k) {
    larger.push_back(next_probes(groups[k], previous, momenta));
    const auto b = best(groups[k]);
    previous = b ? *b : TuneConfig{groups[k], previous.lr, previous.momentum};
  }
  for (const auto& configs : larger) {
    if (!configs.empty() && fresh(configs.front())) return configs.front();
  }
  for (const auto& configs : larger) {
    for (const TuneConfig& c : configs) {
      if (fresh(c)) return c;
    }
  }
  return std::nullopt;
}

}  // namespace gossipd::daemon
