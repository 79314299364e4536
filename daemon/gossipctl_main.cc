// gossipctl: the operator tool (benchmarks now; keys, compare and collect later).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "daemon/allreduce_bench.h"
#include "daemon/cli.h"
#include "daemon/trainer_bench.h"
#include "trainer/models.h"

namespace {

using namespace gossipd::daemon;

int run_trainer_bench(const TrainerBenchOptions& o) {
  for (int threads : o.threads) {
    TrainerBenchResult r = bench_trainer(o, threads);
    std::printf(
        "{\"bench\":\"trainer\",\"model\":\"%s\",\"batch\":%zu,\"threads\":%d,"
        "\"gemm_flops_per_step\":%.0f,\"step_ms\":%.4f,\"sgemm_ms\":%.4f,"
        "\"train_gflops\":%.2f,\"sgemm_gflops\":%.2f,\"ratio\":%.3f}\n",
        o.model.c_str(), o.batch, r.threads, r.gemm_flops_per_step, r.step_seconds * 1e3,
        r.sgemm_seconds * 1e3, r.train_gflops(), r.sgemm_gflops(), r.ratio());
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("gossipctl: operator tool for gossipd clusters", "gossipctl");
  app.require_subcommand(1);
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks that print JSON lines");
  bench->require_subcommand(1);

  TrainerBenchOptions tb;
  CLI::App* tcmd = bench->add_subcommand("trainer", "Training step vs raw sgemm on the same shapes");
  tcmd->add_option("--model", tb.model, "Model")
      ->check(CLI::IsMember(gossipd::trainer::model_names()))
      ->capture_default_str();
  tcmd->add_option("--batch", tb.batch, "Batch size")->check(CLI::Range(1, 65536))->capture_default_str();
  tcmd->add_option("--threads", tb.threads, "OpenBLAS thread counts to measure, e.g. 1,2")
      ->delimiter(',')
      ->check(CLI::Range(1, 256));
  tcmd->add_option("--steps", tb.steps, "Timed steps per trial")->check(CLI::Range(1, 100000))->capture_default_str();
  tcmd->add_option("--trials", tb.trials, "Trials (median reported)")->check(CLI::Range(1, 1000))->capture_default_str();

  AllreduceBenchOptions ab;
  CLI::App* acmd = add_allreduce_bench_command(*bench, ab);

  return run_cli(app, argc, argv, [&]() -> int {
    if (tcmd->parsed()) return run_trainer_bench(tb);
    if (acmd->parsed()) return run_allreduce_bench(ab);
    return kExitUsage;
  });
}
