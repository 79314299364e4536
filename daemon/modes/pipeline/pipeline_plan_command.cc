#include "daemon/modes/pipeline/pipeline_plan_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <stdexcept>

#include "daemon/config/cli.h"
#include "daemon/ctl/plan_command.h"
#include "daemon/modes/pipeline/pipeline_plan.h"
#include "daemon/modes/pipeline/pipeline_search.h"
#include "daemon/plan/plan_layers.h"
#include "trainer/models.h"

namespace gossipd::daemon {
namespace {

using topology::PipelineSchedule;

constexpr PipelineSchedule kSchedules[] = {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
                                           PipelineSchedule::kOneFOneBAsync, PipelineSchedule::kZeroBubble};

// The chosen partition's predicted step under each schedule.
std::vector<double> step_by_schedule(PipelinePlanInput in, const topology::LayerRanges& ranges) {
  std::vector<double> out;
  for (PipelineSchedule s : kSchedules) {
    in.schedule = s;
    out.push_back(price_partition(in, ranges).step_s);
  }
  return out;
}

std::string layer_kinds(const PipelinePlanInput& in, const StagePlan& s) {
  std::string kinds;
  for (size_t i = s.first; i < s.last; ++i) kinds += (kinds.empty() ? "" : " ") + in.layers[i].kind;
  return kinds;
}

void print_table(const PlanPipelineOptions& o, const std::string& net, const PipelinePlanInput& in,
                 const PipelineChoice& c, const std::vector<double>& steps) {
  std::printf(
      "gossipctl plan pipeline: %s (%s), batch %zu in %zu micro-batches of %zu, at most %zu stages, "
      "partitioned for %s, %s, latency %.1f us (layers timed on this machine)\n\n",
      o.model.c_str(), net.c_str(), o.batch, o.micros, in.micro_batch, o.stages, o.schedule.c_str(),
      o.bandwidth.c_str(), in.link.latency_s * 1e6);
  std::printf(
      "| stage | layers | forward ms | backward ms | params | boundary MB | in flight | memory MB |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t k = 0; k < c.plan.stages.size(); ++k) {
    const StagePlan& s = c.plan.stages[k];
    std::printf("| %zu | %zu-%zu %s | %.3f | %.3f | %zu | %.3f | %zu | %.2f |\n", k, s.first, s.last - 1,
                layer_kinds(in, s).c_str(), s.forward_s * 1e3, s.backward_s * 1e3, s.params,
                s.boundary_bytes / 1e6, s.in_flight, s.memory_bytes / 1e6);
  }
  std::printf("\nbubble %.3f (GPipe's (K-1)/(M+K-1) = %.3f); predicted step:", c.plan.bubble,
              topology::gpipe_bubble(c.plan.stages.size(), o.micros));
  for (size_t i = 0; i < steps.size(); ++i)
    std::printf("%s %s %.3f ms", i ? "," : "", topology::schedule_name(kSchedules[i]).c_str(),
                steps[i] * 1e3);
  std::printf("\n\n| stages | fastest partition | step ms | |\n| --- | --- | --- | --- |\n");
  for (const PipelinePlan& p : c.by_count) {
    std::printf("| %zu | %s | %.3f | %s |\n", p.stages.size(), topology::layer_counts(p.ranges).c_str(),
                p.step_s * 1e3, p.ranges.first == c.plan.ranges.first ? "chosen" : "");
  }
  if (!c.why.empty()) std::printf("\n%s\n", c.why.c_str());
}

void print_json(const PlanPipelineOptions& o, const PipelinePlanInput& in, const PipelineChoice& c,
                const std::vector<double>& steps) {
  std::printf(
      "{\"plan\":\"pipeline\",\"model\":\"%s\",\"batch\":%zu,\"micros\":%zu,\"micro_batch\":%zu,"
      "\"schedule\":\"%s\",\"stages_asked\":%zu,\"bandwidth_bytes_per_s\":%.0f,\"latency_s\":%.9f,"
      "\"partition\":\"%s\",\"bubble\":%.6f,\"stages\":[",
      o.model.c_str(), o.batch, o.micros, in.micro_batch, o.schedule.c_str(), o.stages, in.link.bytes_per_s,
      in.link.latency_s, topology::layer_counts(c.plan.ranges).c_str(), c.plan.bubble);
  for (size_t k = 0; k < c.plan.stages.size(); ++k) {
    const StagePlan& s = c.plan.stages[k];
    std::printf(
        "%s{\"first\":%zu,\"last\":%zu,\"forward_s\":%.9f,\"backward_s\":%.9f,\"params\":%zu,"
        "\"boundary_bytes\":%.0f,\"in_flight\":%zu,\"stash_floats\":%zu,\"memory_bytes\":%.0f}",
        k ? "," : "", s.first, s.last, s.forward_s, s.backward_s, s.params, s.boundary_bytes, s.in_flight,
        s.stash_floats, s.memory_bytes);
  }
  std::printf("],\"step_s\":{");
  for (size_t i = 0; i < steps.size(); ++i)
    std::printf("%s\"%s\":%.9f", i ? "," : "", topology::schedule_name(kSchedules[i]).c_str(), steps[i]);
  std::printf("},\"by_count\":[");
  for (size_t i = 0; i < c.by_count.size(); ++i) {
    std::printf("%s{\"stages\":%zu,\"partition\":\"%s\",\"step_s\":%.9f}", i ? "," : "",
                c.by_count[i].stages.size(), topology::layer_counts(c.by_count[i].ranges).c_str(),
                c.by_count[i].step_s);
  }
  std::printf("],\"why\":\"%s\"}\n", c.why.c_str());
}

void print_ranking(const PlanPipelineOptions& o, const std::string& net, const LinkModel& link,
                   const CachedProfile& c, const std::vector<WholePlan>& plans) {
  std::printf(
      "gossipctl plan pipeline: %s (%s), global batch %zu on %zu processes, link %.3g GB/s, latency %.1f us\n"
      "%s\n\n",
      o.model.c_str(), net.c_str(), o.batch, o.procs, link.bytes_per_s / 1e9, link.latency_s * 1e6,
      c.said.c_str());
  std::printf(
      "| rank | K x D | schedule | M | micro-batch | partition | step ms | allreduce ms | bubble | samples/s "
      "|\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t i = 0; i < plans.size() && i < o.top; ++i) {
    const WholePlan& p = plans[i];
    std::printf("| %zu | %zux%zu | %s | %zu | %zu | %s | %.2f | %.2f | %.3f | %.0f |\n", i + 1, p.stages,
                p.replicas, topology::schedule_name(p.schedule).c_str(), p.micros, p.micro_batch,
                topology::layer_counts(p.pipeline.ranges).c_str(), p.step_s * 1e3, p.allreduce_s * 1e3,
                p.pipeline.bubble, static_cast<double>(p.batch) / p.step_s);
  }
  std::printf("\n%zu plans priced; gossipd run --algo pipeline runs the first.\n", plans.size());
}

void print_ranking_json(const PlanPipelineOptions& o, const LinkModel& link, const std::string& file,
                        const CachedProfile& c, const std::vector<WholePlan>& plans) {
  std::printf(
      "{\"plan\":\"pipeline\",\"model\":\"%s\",\"batch\":%zu,\"procs\":%zu,\"bandwidth_bytes_per_s\":%.0f,"
      "\"latency_s\":%.9f,\"profile\":{\"file\":\"%s\",\"machine\":\"%s\",\"date\":\"%s\"},\"plans\":[",
      o.model.c_str(), o.batch, o.procs, link.bytes_per_s, link.latency_s, file.c_str(),
      c.profile.machine.c_str(), c.profile.date.c_str());
  for (size_t i = 0; i < plans.size() && i < o.top; ++i) {
    const WholePlan& p = plans[i];
    std::printf(
        "%s{\"stages\":%zu,\"replicas\":%zu,\"micros\":%zu,\"micro_batch\":%zu,\"schedule\":\"%s\","
        "\"partition\":\"%s\",\"step_s\":%.9f,\"allreduce_s\":%.9f,\"bubble\":%.6f}",
        i ? "," : "", p.stages, p.replicas, p.micros, p.micro_batch,
        topology::schedule_name(p.schedule).c_str(), topology::layer_counts(p.pipeline.ranges).c_str(),
        p.step_s, p.allreduce_s, p.pipeline.bubble);
  }
  std::printf("]}\n");
}

// shm and loopback: processes on one host, through shared memory (what
// gossipd run does there) or over the sockets (--shm-kb 0).
LinkModel plan_pipeline_link(const PlanPipelineOptions& o) {
  if (o.bandwidth == "shm") return kSharedMemory;
  if (o.bandwidth == "loopback") return kLoopback;
  return plan_link("plan pipeline", o.bandwidth, o.latency_us);
}

int run_ranking(const PlanPipelineOptions& o, trainer::Model& model) {
  const LinkModel link = plan_pipeline_link(o);
  PlanLimits limits;
  if (o.micros != 0) limits.micros = o.micros;
  if (o.schedule != "auto") limits.schedule = topology::parse_schedule(o.schedule);
  const std::vector<size_t> sizes = plan_micro_batches(o.batch, o.procs, model.layers().size(), limits);
  if (sizes.empty())
    throw UsageError("plan pipeline: no plan of " + std::to_string(o.procs) + " processes fits --batch " +
                     std::to_string(o.batch) + " and the model's " + std::to_string(model.layers().size()) +
                     " layers" + (o.micros ? " and --micro-batches " + std::to_string(o.micros) : ""));
  const trainer::OptimizerOptions optimizer;
  const std::filesystem::path file = profile_file(o.cache_dir, model_key(model, optimizer));
  const CachedProfile c = cached_profile(file, model, optimizer, sizes, o.reps);
  std::vector<WholePlan> plans;
  try {
    plans = rank_pipeline_plans(c.profile, o.batch, o.procs, link, limits);
  } catch (const std::invalid_argument& e) {
    throw UsageError("plan pipeline: " + std::string(e.what()));
  }
  if (o.json) {
    print_ranking_json(o, link, file.string(), c, plans);
  } else {
    print_ranking(o, describe(plan_layers(model)), link, c, plans);
  }
  return kExitOk;
}

// --procs and what goes with it.
void add_ranking_flags(CLI::App& cmd, PlanPipelineOptions& o) {
  cmd.add_option(
         "--procs", o.procs,
         "Rank every plan of P processes (K stages x D replicas, M, schedule, partition) for the global "
         "--batch, as gossipd run --algo pipeline chooses (--stages is not read)")
      ->check(CLI::Range(size_t{1}, size_t{4096}));
  o.cache_dir = default_cache_dir();
  cmd.add_option(
         "--cache-dir", o.cache_dir,
         "--procs: where the layer profile is cached, one file per model (as gossipd run --cache-dir)")
      ->capture_default_str();
  cmd.add_option("--top", o.top, "--procs: plans printed")
      ->check(CLI::Range(size_t{1}, size_t{100000}))
      ->capture_default_str();
}

}  // namespace

CLI::App* add_plan_pipeline(CLI::App& plan, PlanPipelineOptions& o) {
  CLI::App* cmd = plan.add_subcommand(
      "pipeline",
      "Profile a model's layers here, partition them into at most --stages stages, merge, predict");
  cmd->add_option("--model", o.model, "Model")
      ->check(CLI::IsMember(trainer::model_names()))
      ->capture_default_str();
  cmd->add_option("--hidden", o.hidden, "Hidden dense widths (default: the model's)")
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--stages", o.stages, "Most stages K")->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--batch", o.batch, "One pipeline's batch (--procs: the global batch, over the replicas)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--micro-batches", o.micros,
                  "Micro-batches M per batch (M divides --batch); 0: about 8 samples each (--procs: every M)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 16))
      ->capture_default_str();
  cmd->add_option(
         "--schedule", o.schedule,
         "The schedule the partition is chosen for (auto: 1f1b; --procs: the planner's of gpipe, 1f1b "
         "and zb; 1f1b-async only when named)")
      ->check(CLI::IsMember({"auto", "gpipe", "1f1b", "1f1b-async", "zb"}))
      ->capture_default_str();
  cmd->add_option(
         "--bandwidth", o.bandwidth,
         "Link bandwidth between processes: 100mbit, 1gbit, ...; shm (processes on one host, as gossipd run "
         "moves their tensors: through shared memory) or loopback (one host, gossipd run --shm-kb 0)")
      ->capture_default_str();
  cmd->add_option("--latency-us", o.latency_us,
                  "Per-message latency (alpha), microseconds (shm and loopback: their own, 2 and 8)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--reps", o.reps, "Timed passes per layer and micro-batch size (the median is taken)")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_flag("--json", o.json, "One JSON object instead of the tables");
  cmd->add_option("--threads", o.threads, "OpenBLAS threads while profiling (gossipd run's default: 1)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  add_ranking_flags(*cmd, o);
  return cmd;
}

int run_plan_pipeline(const PlanPipelineOptions& given) {
  PlanPipelineOptions o = given;
  o.micros = topology::micro_batches_for(o.batch, o.micros);
  const std::unique_ptr<trainer::Model> model = plan_model("plan pipeline", o.model, o.hidden);
  set_blas_threads(o.threads);
  if (given.procs > 0) {  // auto: every schedule the planner ranks, as gossipd run's
    o.micros = given.micros;
    return run_ranking(o, *model);
  }
  if (o.schedule == "auto") o.schedule = "1f1b";
  if (o.batch % o.micros != 0)
    throw UsageError("plan pipeline: --micro-batches " + std::to_string(o.micros) +
                     " does not divide --batch " + std::to_string(o.batch));
  if (o.stages > model->layers().size())
    throw UsageError("plan pipeline: --stages " + std::to_string(o.stages) + " is more than the " + o.model +
                     "'s " + std::to_string(model->layers().size()) + " layers");
  PipelinePlanInput in = measure_pipeline(*model, trainer::OptimizerOptions{}, o.batch / o.micros, o.reps);
  in.micros = o.micros;
  in.schedule = topology::parse_schedule(o.schedule);
  in.link = plan_pipeline_link(o);
  const PipelineChoice c = plan_pipeline(in, o.stages);
  const std::vector<double> steps = step_by_schedule(in, c.plan.ranges);
  if (o.json) {
    print_json(o, in, c, steps);
  } else {
    print_table(o, describe(plan_layers(*model)), in, c, steps);
  }
  return kExitOk;
}

std::unique_ptr<ModeTools> make_pipeline_tools() {
  return std::make_unique<OneCommandTools<PlanPipelineOptions>>(
      [](ToolParents& parents, PlanPipelineOptions& o) { return add_plan_pipeline(parents.plan, o); },
      run_plan_pipeline);
}

}  // namespace gossipd::daemon
