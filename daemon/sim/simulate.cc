#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "daemon/ctl/compare_flags.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/ctl/mean_curve.h"
#include "daemon/ctl/simulate_command.h"
#include "daemon/ctl/worker_watch.h"
#include "daemon/sim/virtual_cluster.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// Time in the simulation is not a network's: deadlines and timeouts that
// would fire on a busy machine running every member at once are pushed out
// of the way (a skipped segment would change the arithmetic; a member is
// never slow for a reason the simulation means). Flags an entry sets win.
const std::vector<std::pair<std::string, std::string>> kPatientFlags = {
    {"--segment-deadline-ms", "3600000"},
    {"--failure-timeout-ms", "3600000"},
    {"--timeout-ms", "3600000"},
    {"--startup-timeout-ms", "3600000"},
};

const char* const kTimeModel =
    "the wall clock of this process, every member on it at once (not a network's: no time model yet)";

void refuse_process_flags(const CompareOptions& o) {
  const auto refuse = [](bool given, const std::string& flag) {
    if (given)
      throw UsageError(flag +
                       " is compare's (real processes and links); gossipctl simulate runs the workers "
                       "in one process: drop it");
  };
  refuse(o.netns, "--netns");
  refuse(!o.gossipd.empty(), "--gossipd");
  refuse(!o.bandwidth.empty(), "--bandwidth");
  refuse(o.delay_ms > 0, "--delay-ms");
  refuse(o.send_buffer_kb > 0, "--send-buffer-kb");
  refuse(!o.preset.empty(), "--preset");
}

std::vector<std::string> member_args(const CompareOptions& o, const std::string& algo, int i,
                                     const std::vector<std::string>& endpoints, const std::string& dir) {
  std::vector<std::string> a = compare_run_args(o, algo, i, endpoints, dir, "");
  for (const auto& [flag, value] : kPatientFlags) {
    if (std::find(a.begin(), a.end(), flag) == a.end()) a.insert(a.end(), {flag, value});
  }
  return a;
}

proto::CompareResult simulate_entry(const CompareOptions& o, const std::string& algo, std::stop_token stop) {
  proto::CompareResult res = compare_entry_result(o, algo);
  const std::string dir = fresh_entry_dir(o, algo);
  const std::vector<std::string> metrics = entry_metrics_files(o, algo);
  std::vector<std::string> endpoints, params;
  for (int k = 0; k < o.workers; ++k) {
    const std::string id = "w" + std::to_string(k);
    endpoints.push_back("inproc-hub://" + id);
    params.push_back(dir + "/" + id + ".params");
  }
  std::vector<std::vector<std::string>> args;
  for (int k = 0; k < o.workers; ++k) args.push_back(member_args(o, algo, k, endpoints, dir));
  const uint64_t total = compare_entry(o, algo).launch.steps_per_epoch * static_cast<uint64_t>(o.epochs);
  Progress progress;
  const auto start = Clock::now();
  double best = 0;
  const VirtualRun run = run_virtual_cluster(args, stop, [&](uint64_t round, uint32_t epoch) {
    for (const CurvePoint& p : mean_curve(metrics)) best = std::max(best, p.test_accuracy);
    progress.show(algo, std::min(round, total), total, std::min(epoch, static_cast<uint32_t>(o.epochs)),
                  o.epochs, best, std::chrono::duration<double>(Clock::now() - start).count());
  });
  if (run.failure.empty() && !run.stopped) {
    for (const CurvePoint& p : mean_curve(metrics)) best = std::max(best, p.test_accuracy);
    progress.show(algo, total, total, static_cast<uint32_t>(o.epochs), o.epochs, best,
                  std::chrono::duration<double>(Clock::now() - start).count());
  }
  progress.end();
  if (run.stopped) {
    res.set_status("stopped by signal");
    return res;
  }
  if (!run.failure.empty()) {
    res.set_status(run.failure);
    std::printf("%-10s FAILED: %s\n", algo.c_str(), run.failure.c_str());
    return res;
  }
  res.set_status("ok");
  summarize_compare_entry(o, metrics, params, dir, res);
  return res;
}

}  // namespace

CLI::App* add_simulate_command(CLI::App& app, CompareOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Train with each protocol in turn on virtual workers in this process and report as compare");
  add_compare_flags(cmd, o, kMaxSimulatedWorkers);
  return cmd;
}

int run_simulate(const CompareOptions& o) {
  std::stop_source stop;
  SignalWatcher signals(stop);
  refuse_process_flags(o);
  check_compare_entries(o);
  require_gnuplot();
  prepare_out_dir(o.out);
  set_blas_threads(o.threads);  // process-wide: every member's
  proto::CompareSummary summary = compare_summary_header(o);
  summary.set_simulated(true);
  summary.set_time_model(kTimeModel);
  std::printf("gossipctl simulate: %zu protocols x %d virtual workers, batch %zu, %d epochs; output in %s\n",
              o.algos.size(), o.workers, o.batch, o.epochs, o.out.c_str());
  std::fflush(stdout);
  for (const auto& algo : o.algos) {
    if (stop.stop_requested()) break;
    *summary.add_results() = simulate_entry(o, algo, stop.get_token());
  }
  write_compare_report(
      o.out, summary, o.target,
      compare_setup(o, std::string(" virtual workers (gossipd run's members in one process, over "
                                   "an in-process hub; times are ") +
                           kTimeModel + ")"));
  std::printf("gossipctl simulate: report in %s/report.md and %s/report.html (summary.json, plots *.svg)\n",
              o.out.c_str(), o.out.c_str());
  return stop.stop_requested() ? kExitFailure : kExitOk;
}

}  // namespace gossipd::daemon
