#include "daemon/modes/pipeline/pipeline_agreement.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "daemon/config/cli.h"
#include "daemon/plan/layer_profile.h"
#include "protocol/collectives/collectives.h"

namespace gossipd::daemon {
namespace {

using topology::PipelineSchedule;

// Passes per layer and micro-batch size when rank 0 profiles.
constexpr int kProfileReps = 5;

constexpr PipelineSchedule kSchedules[] = {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
                                           PipelineSchedule::kOneFOneBAsync, PipelineSchedule::kZeroBubble};

// A plan as floats: K, D, M, the schedule's index, the predicted step,
// then the layers per stage.
constexpr size_t kHead = 5;

std::vector<float> encode(const WholePlan& p) {
  std::vector<float> out{static_cast<float>(p.stages), static_cast<float>(p.replicas),
                         static_cast<float>(p.micros), 0.0f, static_cast<float>(p.step_s)};
  for (size_t i = 0; i < std::size(kSchedules); ++i) {
    if (kSchedules[i] == p.schedule) out[3] = static_cast<float>(i);
  }
  for (size_t k = 0; k < p.stages; ++k)
    out.push_back(static_cast<float>(p.pipeline.ranges.end(k) - p.pipeline.ranges.begin(k)));
  return out;
}

PipelineSetup decode(std::span<const float> f) {
  PipelineSetup s;
  s.shape = {static_cast<size_t>(f[0]), static_cast<size_t>(f[1])};
  s.micros = static_cast<size_t>(f[2]);
  s.schedule = kSchedules[static_cast<size_t>(f[3])];
  s.predicted_step_s = f[4];
  s.ranges.first.push_back(0);
  for (size_t k = 0; k < s.shape.stages; ++k)
    s.ranges.first.push_back(s.ranges.first.back() + static_cast<size_t>(f[kHead + k]));
  return s;
}

bool fixed(const PlanLimits& l) { return l.stages && l.replicas && l.micros && l.schedule && l.partition; }

// Rank 0's choice, and how it came to it.
std::pair<WholePlan, std::string> plan_here(trainer::Model& model, const trainer::OptimizerOptions& optimizer,
                                            const PlanRequest& r) {
  const PlanLimits& l = r.limits;
  if (fixed(l)) {
    // Priced without a profile: a plan given whole runs as given.
    WholePlan p;
    p.stages = *l.stages;
    p.replicas = *l.replicas;
    p.micros = *l.micros;
    p.schedule = *l.schedule;
    p.pipeline.ranges = *l.partition;
    return {p, "given"};
  }
  const size_t layers = model.layers().size();
  const CachedProfile c =
      cached_profile(profile_file(r.cache_dir, model_key(model, optimizer)), model, optimizer,
                     plan_micro_batches(r.batch, r.members, layers, l), kProfileReps);
  const std::vector<WholePlan> plans = rank_pipeline_plans(c.profile, r.batch, r.members, r.link, l);
  char buf[160];
  std::snprintf(buf, sizeof(buf), "planned: the fastest of %zu plans priced, %.2f ms a step predicted; ",
                plans.size(), plans.front().step_s * 1e3);
  return {plans.front(), buf + c.said};
}

}  // namespace

PipelineSetup agree_on_plan(protocol::Group& all, size_t rank, trainer::Model& model,
                            const trainer::OptimizerOptions& optimizer, const PlanRequest& request) {
  const size_t block = kHead + model.layers().size();
  std::vector<float> plans(block * request.members, 0.0f);
  std::string how;
  if (rank == 0) {
    try {
      auto [plan, said] = plan_here(model, optimizer, request);
      const std::vector<float> mine = encode(plan);
      std::copy(mine.begin(), mine.end(), plans.begin());
      how = said;
    } catch (const std::exception& e) {
      how = e.what();  // K = 0 tells the others
    }
  }
  protocol::Allgather(all, plans).run();
  if (plans[0] == 0.0f)
    throw DaemonError(rank == 0 ? "pipeline: no plan: " + how
                                : "pipeline: rank 0 could make no plan (its log says why)");
  PipelineSetup s = decode(std::span<const float>(plans).first(block));
  s.how = rank == 0 ? how : "rank 0's plan";
  if (rank == 0)
    spdlog::info("pipeline plan {}x{} {} M={} partition {}: {}", s.shape.stages, s.shape.replicas,
                 topology::schedule_name(s.schedule), s.micros, topology::layer_counts(s.ranges), how);
  return s;
}

}  // namespace gossipd::daemon
