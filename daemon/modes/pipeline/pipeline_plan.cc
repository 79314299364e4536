#include "daemon/modes/pipeline/pipeline_plan.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <stdexcept>

#include "daemon/plan/layer_profile.h"

namespace gossipd::daemon {
namespace {

using topology::PipelineSchedule;

constexpr size_t kAsyncBatches = 8;  // batches 1f1b-async is priced over
constexpr double kWorthIt = 0.01;    // a stage must make the step this much faster

size_t in_flight(PipelineSchedule s, size_t stages, size_t micros, size_t stage) {
  // 1f1b-async holds what 1f1b does (its order over an epoch).
  if (s == PipelineSchedule::kOneFOneBAsync) s = PipelineSchedule::kOneFOneB;
  return topology::max_in_flight(topology::pipeline_ops(s, stages, micros, stage));
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
    s.weights_s += l.weights_s;
    s.refind_s += l.refind_s;
    // A layer that splits its backward (a convolution) keeps its forward
    // state for its W (the im2col); the others' is their B's.
    if (l.weights_s > 0) s.refind_weights_s += l.refind_s;
    s.params += l.params;
    per_sample += l.out_floats;
  }
  s.stash_floats = per_sample * in.micro_batch;
  if (k + 1 < ranges.stages()) s.boundary_bytes = 4.0 * in.layers[s.last - 1].out_floats * in.micro_batch;
  s.in_flight = in_flight(in.schedule, ranges.stages(), in.micros, k);
  const bool stash_weights = in.schedule == PipelineSchedule::kOneFOneBAsync;
  // Parameters, gradients (micro-batches accumulate in them) and velocity;
  // 1f1b-async: a copy of the weights for each in flight over an update
  // but the newest.
  const double weight_copies = stash_weights ? static_cast<double>(s.in_flight - 1) : 0.0;
  // zb: the output gradients kept from a B to its W, of two micro-batches
  // at most (B of m comes before W of m - 1); at most a stash's size each.
  const double kept_gradients = in.schedule == PipelineSchedule::kZeroBubble && k > 0 ? 2.0 : 0.0;
  s.memory_bytes =
      4.0 * (3.0 * static_cast<double>(s.params) +
             (static_cast<double>(s.in_flight) + kept_gradients) * static_cast<double>(s.stash_floats) +
             weight_copies * static_cast<double>(s.params));
  return s;
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
  LayerProfile profile;
  profile_layers(model, optimizer, {micro_batch}, reps, profile);
  PipelinePlanInput in;
  in.layers = profile.at.front();
  in.input_floats = profile.input_floats;
  in.micro_batch = micro_batch;
  in.update_s_per_param = profile.update_s_per_param;
  in.stash_s_per_param = profile.copy_s_per_param;
  return in;
}

double allreduce_seconds(const LinkModel& link, size_t replicas, size_t floats, double pass_s_per_float) {
  if (replicas <= 1 || floats == 0) return 0;
  const double d = static_cast<double>(replicas);
  return link.seconds(2 * (d - 1), 2 * (d - 1) / d * 4.0 * static_cast<double>(floats)) +
         pass_s_per_float * static_cast<double>(floats) / d;
}

PipelinePlan price_partition(const PipelinePlanInput& in, const topology::LayerRanges& ranges) {
  PipelinePlan p;
  p.ranges = ranges;
  topology::StageTimes t;
  const bool async = in.schedule == PipelineSchedule::kOneFOneBAsync;
  for (size_t k = 0; k < ranges.stages(); ++k) {
    const StagePlan s = stage_plan(in, ranges, k);
    // Sending its output and receiving its input, forward; the same bytes
    // back as gradients.
    const double in_bytes = k == 0 ? 0 : p.stages.back().boundary_bytes;
    const double copies =
        in.link.copy_bytes_per_s > 0 ? (in_bytes + s.boundary_bytes) / in.link.copy_bytes_per_s : 0;
    t.forward.push_back(s.forward_s + copies);
    t.backward.push_back(s.backward_s + copies);
    t.refind.push_back(s.refind_s);
    t.weights.push_back(s.weights_s);
    t.refind_weights.push_back(s.refind_weights_s);
    // 1f1b-async updates after every backward, and a stage with
    // micro-batches in flight then keeps their weights: priced with the
    // update, as the replicas' allreduce before it.
    // With D replicas each updates 1/D of the stage and gathers the rest
    // (the bytes of an allreduce; PipelineStep::update).
    const bool stashes = async && k + 1 < ranges.stages();
    // (A stage with fewer parameter layers than replicas updates it all.)
    size_t with_params = 0;
    for (size_t i = s.first; i < s.last; ++i) with_params += in.layers[i].params > 0 ? 1 : 0;
    const double share =
        static_cast<double>(s.params) / static_cast<double>(with_params >= in.replicas ? in.replicas : 1);
    t.update.push_back(in.update_s_per_param * share +
                       (stashes ? in.stash_s_per_param * static_cast<double>(s.params) : 0) +
                       allreduce_seconds(in.link, in.replicas, s.params, in.stash_s_per_param));
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
