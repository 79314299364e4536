#include "daemon/plan/pipeline_plan.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>

namespace gossipd::daemon {
namespace {

using topology::PipelineSchedule;

constexpr size_t kAsyncBatches = 8;  // batches 1f1b-async is priced over
constexpr double kWorthIt = 0.01;    // a stage must make the step this much faster

size_t in_flight(PipelineSchedule s, size_t stages, size_t micros, size_t stage) {
  return s == PipelineSchedule::kGpipe ? micros : std::min(stages - stage, micros);
}

StagePlan stage_plan(const PipelinePlanInput& in, const topology::LayerRanges& ranges, size_t k) {
  StagePlan s;
  s.first = ranges.begin(k);
  s.last = ranges.end(k);
  size_t per_sample = s.first == 0 ? in.input_floats : in.layers[s.first - 1].out_floats;
  for (size_t i = s.first; i < s.last; ++i) {
    const trainer::LayerTiming& l = in.layers[i];
    s.forward_s += l.forward_s;
    s.backward_s += l.backward_s;
    s.refind_s += l.refind_s;
    s.params += l.params;
    per_sample += l.out_floats;
  }
  s.stash_floats = per_sample * in.micro_batch;
  if (k + 1 < ranges.stages()) s.boundary_bytes = 4.0 * in.layers[s.last - 1].out_floats * in.micro_batch;
  s.in_flight = in_flight(in.schedule, ranges.stages(), in.micros, k);
  const bool stash_weights = in.schedule == PipelineSchedule::kOneFOneBAsync;
  // Parameters, gradients (micro-batches accumulate in them) and velocity.
  s.memory_bytes = 4.0 * (3.0 * static_cast<double>(s.params) +
                          static_cast<double>(s.in_flight) *
                              (static_cast<double>(s.stash_floats) + (stash_weights ? s.params : 0)));
  return s;
}

// The fastest of `reps` runs of `f` after an untimed one.
template <typename F>
double best_seconds(int reps, F&& f) {
  double best = 0;
  for (int r = 0; r <= reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r == 1 || (r > 1 && s < best)) best = s;
  }
  return best;
}

// Throws std::invalid_argument unless 1 <= stages <= the layers.
void refuse_stages(const PipelinePlanInput& in, size_t stages) {
  const size_t layers = in.layers.size();
  if (stages == 0 || stages > layers)
    throw std::invalid_argument("a pipeline of " + std::to_string(stages) + " stages over " +
                                std::to_string(layers) + " layers: give between 1 and " +
                                std::to_string(layers) + " stages");
}

}  // namespace

PipelinePlanInput measure_pipeline(trainer::Model& model, const trainer::OptimizerOptions& optimizer,
                                   size_t micro_batch, int reps) {
  PipelinePlanInput in;
  in.layers = trainer::time_layers(model, static_cast<int>(micro_batch), reps);
  in.input_floats = model.input_shape().size();
  in.micro_batch = micro_batch;
  trainer::Optimizer opt(optimizer, model.segments(), model.params().size());
  std::vector<float> params(model.params().begin(), model.params().end()), grads(params.size(), 1e-3f);
  std::vector<float> stash;
  const double per_param = params.empty() ? 0 : 1.0 / static_cast<double>(params.size());
  in.update_s_per_param = per_param * best_seconds(reps, [&] { opt.step(params, grads, 1e-3f); });
  // trainer::Stage's weight stashing: a copy at the forward, a swap before
  // and after the backward.
  in.stash_s_per_param = per_param * best_seconds(reps, [&] {
                           stash.assign(params.begin(), params.end());
                           std::swap_ranges(stash.begin(), stash.end(), params.begin());
                           std::swap_ranges(stash.begin(), stash.end(), params.begin());
                         });
  return in;
}

PipelinePlan price_partition(const PipelinePlanInput& in, const topology::LayerRanges& ranges) {
  PipelinePlan p;
  p.ranges = ranges;
  topology::StageTimes t;
  const bool async = in.schedule == PipelineSchedule::kOneFOneBAsync;
  for (size_t k = 0; k < ranges.stages(); ++k) {
    const StagePlan s = stage_plan(in, ranges, k);
    t.forward.push_back(s.forward_s);
    t.backward.push_back(s.backward_s);
    t.refind.push_back(s.refind_s);
    // 1f1b-async updates after every backward, and stashes weights each
    // micro-batch: priced with the update.
    t.update.push_back((in.update_s_per_param + (async ? in.stash_s_per_param : 0)) *
                       static_cast<double>(s.params));
    if (s.boundary_bytes > 0) {
      t.to_next.push_back(in.link.seconds(1, s.boundary_bytes));
      t.to_prev.push_back(in.link.seconds(1, s.boundary_bytes));
    }
    p.stages.push_back(s);
  }
  const size_t micros = async ? in.micros * kAsyncBatches : in.micros;
  const auto timing = topology::simulate_pipeline(in.schedule, micros, t);
  if (!timing) throw std::logic_error("pipeline plan: the schedule deadlocks");
  p.step_s = timing->step / (async ? static_cast<double>(kAsyncBatches) : 1.0);
  for (double b : timing->bubble) p.bubble += b / static_cast<double>(ranges.stages());
  return p;
}

PipelinePlan best_partition(const PipelinePlanInput& in, size_t stages) {
  refuse_stages(in, stages);
  const size_t layers = in.layers.size();
  PipelinePlan best;
  bool found = false;
  topology::LayerRanges r;
  r.first.assign(stages + 1, 0);
  r.first[stages] = layers;
  // Every choice of stages - 1 cut points among the layers' L - 1 gaps.
  const std::function<void(size_t, size_t)> cut = [&](size_t k, size_t from) {
    if (k == stages) {
      PipelinePlan p = price_partition(in, r);
      if (!found || p.step_s < best.step_s) best = std::move(p);
      found = true;
      return;
    }
    for (size_t at = from; at + (stages - k) <= layers; ++at) {
      r.first[k] = at;
      cut(k + 1, at + 1);
    }
  };
  cut(1, 1);
  return best;
}

PipelineChoice plan_pipeline(const PipelinePlanInput& in, size_t stages) {
  refuse_stages(in, stages);
  PipelineChoice c;
  for (size_t k = 1; k <= stages; ++k) c.by_count.push_back(best_partition(in, k));
  // The fewest stages within kWorthIt of the fastest: a stage that does
  // not make the step that much faster is not worth its process and its
  // transfers.
  double fastest = c.by_count.front().step_s;
  for (const PipelinePlan& p : c.by_count) fastest = std::min(fastest, p.step_s);
  for (const PipelinePlan& p : c.by_count) {
    if (p.step_s <= fastest * (1 + kWorthIt)) {
      c.plan = p;
      break;
    }
  }
  if (c.plan.stages.size() == stages) return c;
  const PipelinePlan& asked = c.by_count.back();
  const auto widest = std::max_element(
      asked.stages.begin(), asked.stages.end(),
      [](const StagePlan& a, const StagePlan& b) { return a.boundary_bytes < b.boundary_bytes; });
  char buf[400];
  std::snprintf(
      buf, sizeof(buf),
      "merged to %zu stage%s: the fastest %zu-stage partition (%s) predicts %.2f ms a step, the %zu-stage "
      "one (%s) %.2f ms; its widest boundary (after layer %zu) moves %.2f MB a micro-batch each way, %.2f ms",
      c.plan.stages.size(), c.plan.stages.size() == 1 ? "" : "s", stages,
      topology::layer_counts(asked.ranges).c_str(), asked.step_s * 1e3, c.plan.stages.size(),
      topology::layer_counts(c.plan.ranges).c_str(), c.plan.step_s * 1e3, widest->last - 1,
      widest->boundary_bytes / 1e6, in.link.seconds(1, widest->boundary_bytes) * 1e3);
  c.why = buf;
  return c;
}

}  // namespace gossipd::daemon
