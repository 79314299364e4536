#include "daemon/modes/grid/grid_plan_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <limits>
#include <optional>

#include "daemon/config/cli.h"
#include "daemon/modes/grid/grid_plan.h"
#include "trainer/gemm_set.h"
#include "trainer/models.h"

namespace gossipd::daemon {
namespace {

struct Row {
  topology::GridShape shape;
  std::optional<GridPlan> plan;
  std::string refused;
};

std::string millions(double words) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3fM", words / 1e6);
  return buf;
}

void print_table(const PlanGridOptions& o, const std::string& net, const std::vector<Row>& rows,
                 size_t fastest, double flops) {
  std::printf(
      "gossipctl plan grid: %s (%s), batch %zu, %zu processes, %s, latency %.1f us, %.1f GFLOP/s per "
      "process%s\n",
      o.model.c_str(), net.c_str(), o.batch, o.procs, o.bandwidth.c_str(), o.latency_us, flops / 1e9,
      o.gflops > 0 ? "" : " (sgemm measured)");
  std::printf("words: floats one process sends per step; input gradient %s\n\n", o.input_gradient.c_str());
  std::printf(
      "| grid | forward | input grad | weight grad | halo | total | comm ms | compute ms | step ms | |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    if (!r.plan) {
      std::printf("| %s | - | - | - | - | - | - | - | - | refused: %s |\n", r.shape.name().c_str(),
                  r.refused.c_str());
      continue;
    }
    const GridPlan& p = *r.plan;
    std::printf("| %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.2f | %s |\n", r.shape.name().c_str(),
                millions(p.words.forward).c_str(), millions(p.words.input_gradient).c_str(),
                millions(p.words.weight_gradient).c_str(), millions(p.words.halo).c_str(),
                millions(p.words.total()).c_str(), p.communication_s * 1e3, p.compute_s * 1e3,
                p.step_s() * 1e3, i == fastest ? "fastest" : "");
  }
}

void print_json(const PlanGridOptions& o, const LinkModel& link, const std::vector<Row>& rows, size_t fastest,
                double flops) {
  std::printf(
      "{\"plan\":\"grid\",\"model\":\"%s\",\"batch\":%zu,\"procs\":%zu,\"bandwidth_bytes_per_s\":%.0f,"
      "\"latency_s\":%.9f,\"flops_per_s\":%.0f,\"input_gradient\":\"%s\",\"shapes\":[",
      o.model.c_str(), o.batch, o.procs, link.bytes_per_s, link.latency_s, flops, o.input_gradient.c_str());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::printf("%s{\"grid\":\"%s\",\"rows\":%zu,\"cols\":%zu,", i ? "," : "", r.shape.name().c_str(),
                r.shape.rows, r.shape.cols);
    if (!r.plan) {
      std::string why = r.refused;
      for (char& c : why) c = c == '"' ? '\'' : c;
      std::printf("\"refused\":\"%s\"}", why.c_str());
      continue;
    }
    const GridPlan& p = *r.plan;
    std::printf(
        "\"words\":{\"forward\":%.1f,\"input_gradient\":%.1f,\"weight_gradient\":%.1f,\"halo\":%.1f,"
        "\"total\":%.1f},\"messages\":%.2f,\"communication_s\":%.9f,\"compute_s\":%.9f,\"step_s\":%.9f,"
        "\"fastest\":%s}",
        p.words.forward, p.words.input_gradient, p.words.weight_gradient, p.words.halo, p.words.total(),
        p.messages, p.communication_s, p.compute_s, p.step_s(), i == fastest ? "true" : "false");
  }
  std::printf("]}\n");
}

}  // namespace

CLI::App* add_plan_grid(CLI::App& plan, PlanGridOptions& o) {
  CLI::App* grid = plan.add_subcommand(
      "grid",
      "Every Pr x Pc grid of --procs processes: words moved per step by kind, alpha-beta time, fastest");
  grid->add_option("--model", o.model, "Model")
      ->check(CLI::IsMember(trainer::model_names()))
      ->capture_default_str();
  grid->add_option("--hidden", o.hidden, "Hidden dense widths, e.g. 2048,2048,2048 (default: the model's)")
      ->delimiter(',')
      ->check(CLI::Range(1, 65536));
  grid->add_option("--batch", o.batch, "The grid's batch B (one replica; column c takes block c of it)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 20))
      ->capture_default_str();
  grid->add_option("--procs", o.procs, "Processes P = Pr x Pc")
      ->check(CLI::Range(size_t{1}, size_t{4096}))
      ->capture_default_str();
  grid->add_option("--bandwidth", o.bandwidth,
                   "Link bandwidth: 100mbit, 1gbit, ... (default: this machine's loopback)")
      ->capture_default_str();
  grid->add_option("--latency-us", o.latency_us, "Per-message latency (alpha), microseconds")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  grid->add_option("--gflops", o.gflops,
                   "Compute rate per process (default: sgemm measured on the model's shapes)")
      ->check(CLI::PositiveNumber);
  grid->add_option(
          "--input-gradient", o.input_gradient,
          "How the input gradient is summed over Pr: reduce-scatter (what the grid runs) or allreduce")
      ->check(CLI::IsMember({"reduce-scatter", "allreduce"}))
      ->capture_default_str();
  grid->add_flag("--json", o.json, "One JSON object instead of the table");
  return grid;
}

int run_plan_grid(const PlanGridOptions& o) {
  const std::unique_ptr<trainer::Model> model = plan_model("plan grid", o.model, o.hidden);
  const LinkModel link = plan_link("plan grid", o.bandwidth, o.latency_us);
  GridPlanInput in;
  in.layers = plan_layers(*model);
  in.batch = o.batch;
  in.input_gradient =
      o.input_gradient == "allreduce" ? InputGradient::kAllreduce : InputGradient::kReduceScatter;
  const int per_process = static_cast<int>(std::max<size_t>(1, o.batch / o.procs));
  const double flops =
      o.gflops > 0 ? o.gflops * 1e9 : trainer::sgemm_flops_per_s(model->gemm_shapes(per_process));

  std::vector<Row> rows;
  size_t fastest = std::numeric_limits<size_t>::max();
  for (const topology::GridShape shape : topology::grid_shapes(o.procs)) {
    Row r{shape, std::nullopt, grid_refusal(in, shape).value_or("")};
    if (r.refused.empty()) {
      r.plan = plan_grid(in, shape, link, flops);
      if (fastest == std::numeric_limits<size_t>::max() || r.plan->step_s() < rows[fastest].plan->step_s())
        fastest = rows.size();
    }
    rows.push_back(std::move(r));
  }
  if (fastest == std::numeric_limits<size_t>::max()) {
    throw UsageError("plan grid: no grid of " + std::to_string(o.procs) + " processes can hold " + o.model +
                     " at batch " + std::to_string(o.batch) + " (" + rows.back().shape.name() + ": " +
                     rows.back().refused + ")");
  }
  if (o.json) {
    print_json(o, link, rows, fastest, flops);
  } else {
    print_table(o, describe(in.layers), rows, fastest, flops);
  }
  return kExitOk;
}

std::unique_ptr<ModeTools> make_grid_tools() {
  return std::make_unique<OneCommandTools<PlanGridOptions>>(
      [](ToolParents& parents, PlanGridOptions& o) { return add_plan_grid(parents.plan, o); }, run_plan_grid);
}

}  // namespace gossipd::daemon
