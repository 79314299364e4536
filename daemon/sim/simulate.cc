#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "daemon/ctl/compare_flags.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/ctl/mean_curve.h"
#include "daemon/ctl/simulate_command.h"
#include "daemon/ctl/worker_watch.h"
#include "daemon/sim/modelled_hosts.h"
#include "daemon/sim/modelled_metrics.h"
#include "daemon/sim/time_only.h"
#include "daemon/sim/virtual_cluster.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

// Time in the simulation is not a network's: deadlines and timeouts that
// would fire on a busy machine running every member at once are pushed out
// of the way (a member is never slow for a reason the simulation means);
// the segments the time model skips at their deadline the members skip
// (protocol/transport/modelled_losses.h). Flags an entry sets win.
const std::vector<std::pair<std::string, std::string>> kPatientFlags = {
    {"--segment-deadline-ms", "3600000"},
    {"--failure-timeout-ms", "3600000"},
    {"--timeout-ms", "3600000"},
    {"--startup-timeout-ms", "3600000"},
};

void refuse_process_flags(const CompareOptions& o) {
  const auto refuse = [](bool given, const std::string& flag) {
    if (given)
      throw UsageError(flag +
                       " is compare's (real processes and links); gossipctl simulate runs the workers "
                       "in one process: drop it");
  };
  refuse(o.netns, "--netns");
  refuse(!o.gossipd.empty(), "--gossipd");
  // An evicted member would wait forever on the one modelled clock the members share.
  refuse(o.evict_byzantine, "--evict-byzantine");
  if (o.delay_ms > 0)
    throw UsageError(
        "--delay-ms is compare's (injected in real processes); simulate models a link's latency "
        "with --latency-ms");
  refuse(o.send_buffer_kb > 0, "--send-buffer-kb");
  if (!o.preset.empty() && o.preset != "wan")
    throw UsageError("--preset " + o.preset +
                     " is compare's; gossipctl simulate models --preset wan's links alone: drop it");
}

std::vector<std::string> member_args(const SimulateOptions& so, const std::string& algo, int i,
                                     const std::vector<std::string>& endpoints, const std::string& dir) {
  std::vector<std::string> a = compare_run_args(so.compare, algo, i, endpoints, dir, "");
  const auto group = std::find(a.begin(), a.end(), "--group");
  if (group != a.end() && group + 1 != a.end())
    *(group + 1) = modelled_group(so, static_cast<size_t>(i), *(group + 1));  // no round trips in-process
  for (const auto& [flag, value] : kPatientFlags) {
    const auto given = std::find(a.begin(), a.end(), flag);
    if (given == a.end()) {
      a.insert(a.end(), {flag, value});
    } else if (flag == "--segment-deadline-ms" && given + 1 != a.end()) {
      *(given + 1) = value;  // --segment-deadline-ms is the time model's (model_entry), not the clock's
    }
  }
  return a;
}

// Each worker's shard must hold a batch: a worker with none would train nothing.
void check_worker_batches(const CompareOptions& o) {
  const size_t samples = compare_train_samples(o), per_worker = samples / static_cast<size_t>(o.workers);
  if (per_worker < o.batch)
    throw UsageError(std::to_string(o.workers) + " workers share " + std::to_string(samples) +
                     " training samples: " + std::to_string(per_worker) + " each, less than a batch of " +
                     std::to_string(o.batch) +
                     "; lower --workers or --batch (or raise --train-limit), or "
                     "model time only with --no-train");
}

proto::CompareResult simulate_entry(const SimulateOptions& so, const std::string& algo,
                                    const ModelledEntry& model, std::stop_token stop,
                                    uint64_t& model_skipped) {
  const CompareOptions& o = so.compare;
  // The model first: which segments its network loses, for the members to skip.
  const uint64_t total = compare_entry(o, algo).launch.steps_per_epoch * static_cast<uint64_t>(o.epochs);
  auto losses = std::make_shared<protocol::ModelledLosses>(model.members);
  const ModelledTimes times = run_modelled(model, total, true, losses.get());
  model_skipped += times.skipped;
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
  for (int k = 0; k < o.workers; ++k) args.push_back(member_args(so, algo, k, endpoints, dir));
  Progress progress;
  const auto start = Clock::now();
  double best = 0;
  const VirtualRun run = run_virtual_cluster(
      args, stop,
      [&](uint64_t round, uint32_t epoch) {
        for (const CurvePoint& p : mean_curve(metrics)) best = std::max(best, p.test_accuracy);
        progress.show(algo, std::min(round, total), total, std::min(epoch, static_cast<uint32_t>(o.epochs)),
                      o.epochs, best, std::chrono::duration<double>(Clock::now() - start).count());
      },
      std::move(losses));
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
  write_modelled_metrics(metrics, model.members, times);
  summarize_compare_entry(o, metrics, params, dir, res);
  return res;
}

}  // namespace

CLI::App* add_simulate_command(CLI::App& app, SimulateOptions& o) {
  CLI::App* cmd = app.add_subcommand("simulate",
                                     "Train with each protocol in turn on virtual workers in this process, "
                                     "time modelled, and report as compare");
  add_compare_flags(cmd, o.compare, kMaxTimeOnlyWorkers);
  cmd->get_option("--workers")
      ->description("Virtual workers: up to " + std::to_string(kMaxSimulatedWorkers) + " training, " +
                    std::to_string(kMaxTimeOnlyWorkers) + " with --no-train");
  cmd->get_option("--bandwidth")
      ->description(std::string("Every modelled host's link, e.g. 100mbit, 1gbit (default ") +
                    kDefaultSimulatedBandwidth + ")");
  cmd->get_option("--topology")
      ->description(
          "A WAN topology file (daemon/config/wan_topology.h): the modelled hosts in its regions, each "
          "path's delay, loss and rate; --workers is its host count (--preset wan: the default one)");
  cmd->add_option("--latency-ms", o.latency_ms, "Every modelled link's latency per message")
      ->capture_default_str();
  cmd->add_option("--burst-kb", o.burst_kb,
                  "Every link's token bucket, KiB: an idle link sends that much at once (compare --netns "
                  "shapes its links with tc tbf burst 256kb)")
      ->capture_default_str();
  cmd->add_option("--step-ms", o.step_ms,
                  "A training step's compute (default: priced by the model's layer profile)");
  cmd->add_option("--stragglers", o.stragglers.text,
                  "Workers computing slower: w3=2.5,w7=4 (their steps take 2.5x, 4x)");
  cmd->add_option("--slow-links", o.slow_links.text,
                  "Hosts with other links, named by a worker on them: w2=10mbit,w5=1gbit");
  cmd->add_option("--workers-per-host", o.workers_per_host,
                  "Workers sharing a host and its link: worker i on host i mod ceil(workers / K), so "
                  "--groups G with K = workers / G puts each group on a host")
      ->capture_default_str();
  cmd->add_option("--host-bandwidth", o.host_bandwidth, "Between two workers on one host")
      ->capture_default_str();
  cmd->add_option("--drop-rate", o.drop_rate,
                  "Share of gossip messages the model loses (skipped at the deadline)")
      ->capture_default_str();
  cmd->add_flag("--no-train", o.no_train,
                "Time only: rounds and bytes from the topology and the link model, no replicas");
  cmd->add_option("--rounds", o.rounds, "With --no-train: the rounds modelled")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000}))
      ->capture_default_str();
  return cmd;
}

int run_simulate(const SimulateOptions& given) {
  SimulateOptions so = given;
  const CompareOptions& o = so.compare;
  std::stop_source stop;
  SignalWatcher signals(stop);
  refuse_process_flags(o);
  resolve_simulate_flags(so);
  check_compare_entries(o);
  set_blas_threads(o.threads);  // process-wide: every member's, and the profile's
  if (so.no_train) return run_time_only(so);
  if (o.workers > kMaxSimulatedWorkers)
    throw UsageError("--workers " + std::to_string(o.workers) + ": simulate trains at most " +
                     std::to_string(kMaxSimulatedWorkers) + " workers; model more with --no-train");
  check_worker_batches(o);
  std::vector<ModelledEntry> models;  // before any run: an entry without a time model is refused now
  for (const auto& algo : o.algos) models.push_back(model_entry(so, algo));
  require_gnuplot();
  prepare_out_dir(o.out);
  // The members' log lines (hundreds of members on two cores say a lot:
  // paused membership, suspicions) go to a file, as compare's workers' do.
  spdlog::set_default_logger(spdlog::basic_logger_mt("members", o.out + "/members.log"));
  proto::CompareSummary summary = compare_summary_header(o);
  summary.set_simulated(true);
  std::printf("gossipctl simulate: %zu protocols x %d virtual workers, batch %zu, %d epochs; output in %s\n",
              o.algos.size(), o.workers, o.batch, o.epochs, o.out.c_str());
  std::fflush(stdout);
  uint64_t model_skipped = 0;
  for (size_t k = 0; k < o.algos.size() && !stop.stop_requested(); ++k)
    *summary.add_results() = simulate_entry(so, o.algos[k], models[k], stop.get_token(), model_skipped);
  summary.set_time_model(time_model_words(so, models.front()) +
                         (model_skipped > 0 ? "; the model skipped " + std::to_string(model_skipped) +
                                                  " messages at their deadline or lost, and the members "
                                                  "skipped them"
                                            : std::string()));
  write_compare_report(o.out, summary, o.target,
                       compare_setup(o,
                                     " virtual workers (gossipd run's members in one process, over an "
                                     "in-process hub; times " +
                                         summary.time_model() + ")"));
  std::printf(
      "gossipctl simulate: report in %s/report.md and %s/report.html (summary.json, plots *.svg; the "
      "members' "
      "log in members.log)\n",
      o.out.c_str(), o.out.c_str());
  return stop.stop_requested() ? kExitFailure : kExitOk;
}

}  // namespace gossipd::daemon
