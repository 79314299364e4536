// gossipctl: the operator tool (compare, tune, collect, plan, benchmarks, keys).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>

#include "daemon/bench/collective_bench.h"
#include "daemon/bench/membership_bench.h"
#include "daemon/bench/trainer_bench.h"
#include "daemon/config/cli.h"
#include "daemon/ctl/collect.h"
#include "daemon/ctl/compare.h"
#include "daemon/ctl/compare_flags.h"
#include "daemon/ctl/mode_tools.h"
#include "daemon/ctl/plan_command.h"
#include "daemon/ctl/simulate_command.h"
#include "daemon/ctl/soak.h"
#include "protocol/transport/curve.h"
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

// Every member gets both files: --curve-secret-key cluster.secret
// --curve-cluster-key cluster.public. Existing keys are never overwritten
// silently: a cluster still running with them would be locked out.
int run_keygen(const std::string& dir, bool force) {
  namespace fs = std::filesystem;
  const fs::path secret = fs::path(dir) / "cluster.secret";
  const fs::path pub = fs::path(dir) / "cluster.public";
  if (!fs::is_directory(dir)) throw UsageError("--out " + dir + " is not a directory (create it first)");
  for (const auto& p : {secret, pub}) {
    if (fs::exists(p) && !force)
      throw UsageError(p.string() + " exists; pass --force to replace the cluster's keys");
  }
  const auto keys = gossipd::protocol::generate_keypair();
  gossipd::protocol::write_secret_key_file(secret.string(), keys);
  gossipd::protocol::write_public_key_file(pub.string(), keys.public_key);
  std::printf("gossipctl keygen: wrote %s (mode 0600, keep it secret) and %s\n", secret.c_str(), pub.c_str());
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  gossipd::daemon::tune_allocator();
  CLI::App app("gossipctl: operator tool for gossipd clusters", "gossipctl");
  app.require_subcommand(1);
  app.set_version_flag("--version", version_line("gossipctl"));
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
  tcmd->add_option("--steps", tb.steps, "Timed steps per trial")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  tcmd->add_option("--trials", tb.trials, "Trials (median reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();

  CollectiveBenchOptions cb;
  const std::vector<CLI::App*> collective_cmds = add_collective_bench_commands(*bench, cb);
  MembershipBenchOptions mb;
  CLI::App* mcmd = add_membership_bench_command(*bench, mb);
  std::string key_dir;
  bool force = false;
  CLI::App* keygen = app.add_subcommand(
      "keygen", "Make the cluster's CURVE keypair: DIR/cluster.secret, DIR/cluster.public");
  keygen->add_option("--out", key_dir, "Directory for the two key files")->required();
  keygen->add_flag("--force", force, "Overwrite existing key files");

  CompareOptions co;
  CLI::App* ccmd = add_compare_command(app, co);
  SimulateOptions so;
  CLI::App* scmd = add_simulate_command(app, so);
  SoakOptions soak;
  CLI::App* soak_cmd = add_soak_command(app, soak);
  CollectOptions collect;
  CLI::App* collect_cmd = add_collect_command(app, collect);
  // Every mode's own commands: at the top, under `plan` or under `bench`.
  ToolParents parents{app, *add_plan_command(app), *bench};
  const std::vector<std::unique_ptr<ModeTools>> tools = registered_tools();
  for (const auto& t : tools) t->add(parents);

  return run_cli(app, argc, argv, [&]() -> int {
    if (ccmd->parsed()) return run_compare(co);
    if (scmd->parsed()) return run_simulate(so);
    if (collect_cmd->parsed()) return run_collect(collect);
    if (soak_cmd->parsed()) return run_soak(soak);
    if (keygen->parsed()) return run_keygen(key_dir, force);
    if (tcmd->parsed()) return run_trainer_bench(tb);
    if (collective_bench_parsed(collective_cmds)) return run_collective_bench(cb);
    if (mcmd->parsed()) return run_membership_bench(mb);
    for (const auto& t : tools)
      if (const auto code = t->run()) return *code;
    return kExitUsage;
  });
}
