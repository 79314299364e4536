#include "daemon/modes/pipeline/pipeline_search.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace gossipd::daemon {
namespace {

using topology::PipelineSchedule;

// Partitions best_partition prices one by one; beyond, the most balanced.
constexpr double kMostPricedCuts = 500;

std::vector<size_t> divisors(size_t n) {
  std::vector<size_t> out;
  for (size_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

double choose(size_t n, size_t k) {
  double c = 1;
  for (size_t i = 1; i <= k; ++i) c = c * static_cast<double>(n - k + i) / static_cast<double>(i);
  return c;
}

// The shapes K x D = procs the limits allow, as (K, D).
std::vector<std::pair<size_t, size_t>> shapes(size_t batch, size_t procs, size_t layers,
                                              const PlanLimits& l) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t d : divisors(procs)) {
    const size_t k = procs / d;
    if (k > layers || batch % d != 0) continue;
    if ((l.stages && *l.stages != k) || (l.replicas && *l.replicas != d)) continue;
    if (l.partition && l.partition->stages() != k) continue;
    out.emplace_back(k, d);
  }
  return out;
}

// M for one replica's batch of `per` samples.
std::vector<size_t> micro_counts(size_t per, const PlanLimits& l) {
  if (l.micros) return per % *l.micros == 0 ? std::vector<size_t>{*l.micros} : std::vector<size_t>{};
  std::vector<size_t> out;
  for (size_t m : divisors(per)) {
    if (m <= kMostMicros) out.push_back(m);
  }
  return out;
}

std::vector<PipelineSchedule> schedules(size_t stages, size_t micros, const PlanLimits& l) {
  if (l.schedule == PipelineSchedule::kOneFOneBAsync && !l.micros && micros != 1) return {};
  if (l.schedule) return {*l.schedule};
  if (stages == 1) return {PipelineSchedule::kOneFOneB};
  return {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kZeroBubble};
}

// The partition into `stages` whose slowest stage (forward and backward
// of a micro-batch) is the fastest: PipeDream's objective, by dynamic
// programming over the cut points.
topology::LayerRanges balanced_partition(const PipelinePlanInput& in, size_t stages) {
  const size_t n = in.layers.size();
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + in.layers[i].forward_s + in.layers[i].backward_s;
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][i]: the slowest of k stages over the first i layers; cut[k][i] where the last starts.
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<size_t>> cut(stages + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= stages; ++k) {
    for (size_t i = k; i <= n; ++i) {
      for (size_t j = k - 1; j < i; ++j) {
        const double v = std::max(best[k - 1][j], prefix[i] - prefix[j]);
        if (v < best[k][i]) {
          best[k][i] = v;
          cut[k][i] = j;
        }
      }
    }
  }
  topology::LayerRanges r;
  r.first.assign(stages + 1, n);
  for (size_t k = stages, i = n; k > 0; --k) {
    i = cut[k][i];
    r.first[k - 1] = i;
  }
  return r;
}

PipelinePlan partition_for(const PipelinePlanInput& in, size_t stages, const PlanLimits& l) {
  if (l.partition) return price_partition(in, *l.partition);
  if (choose(in.layers.size() - 1, stages - 1) <= kMostPricedCuts) return best_partition(in, stages);
  return price_partition(in, balanced_partition(in, stages));
}

WholePlan price(const LayerProfile& profile, size_t batch, size_t stages, size_t replicas, size_t micros,
                PipelineSchedule schedule, const LinkModel& link, const PlanLimits& l) {
  WholePlan w;
  w.stages = stages;
  w.replicas = replicas;
  w.micros = micros;
  w.schedule = schedule;
  w.batch = batch;
  w.micro_batch = batch / (replicas * micros);
  PipelinePlanInput in;
  in.layers = profile.timings(w.micro_batch);
  in.input_floats = profile.input_floats;
  in.micro_batch = w.micro_batch;
  in.micros = micros;
  in.schedule = schedule;
  in.link = link;
  in.update_s_per_param = profile.update_s_per_param;
  in.stash_s_per_param = profile.copy_s_per_param;
  in.replicas = replicas;
  w.pipeline = partition_for(in, stages, l);
  for (const StagePlan& s : w.pipeline.stages)
    w.allreduce_s =
        std::max(w.allreduce_s, allreduce_seconds(link, replicas, s.params, profile.copy_s_per_param));
  w.step_s = w.pipeline.step_s;
  return w;
}

}  // namespace

std::vector<size_t> plan_micro_batches(size_t batch, size_t procs, size_t layers, const PlanLimits& limits) {
  std::vector<size_t> sizes;
  for (const auto& [k, d] : shapes(batch, procs, layers, limits)) {
    for (size_t m : micro_counts(batch / d, limits)) {
      if (!schedules(k, m, limits).empty()) sizes.push_back(batch / d / m);
    }
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::vector<WholePlan> rank_pipeline_plans(const LayerProfile& profile, size_t batch, size_t procs,
                                           const LinkModel& link, const PlanLimits& limits) {
  const size_t layers = profile.at.empty() ? 0 : profile.at.front().size();
  std::vector<WholePlan> plans;
  for (const auto& [k, d] : shapes(batch, procs, layers, limits)) {
    for (size_t m : micro_counts(batch / d, limits)) {
      for (PipelineSchedule s : schedules(k, m, limits))
        plans.push_back(price(profile, batch, k, d, m, s, link, limits));
    }
  }
  if (plans.empty()) {
    throw std::invalid_argument("no pipeline plan of " + std::to_string(procs) + " processes over " +
                                std::to_string(layers) + " layers fits a batch of " + std::to_string(batch) +
                                " and the flags given (--stages, --replicas, --micro-batches, --partition): "
                                "K x D must be the processes, D and M divide the batch");
  }
  std::stable_sort(plans.begin(), plans.end(), [](const WholePlan& a, const WholePlan& b) {
    return a.step_s < b.step_s || (a.step_s == b.step_s && a.stages < b.stages);
  });
  return plans;
}

std::string plan_name(const WholePlan& p) {
  return std::to_string(p.stages) + "x" + std::to_string(p.replicas) + " " +
         topology::schedule_name(p.schedule) + " M=" + std::to_string(p.micros) + " partition " +
         topology::layer_counts(p.pipeline.ranges);
}

}  // namespace gossipd::daemon
