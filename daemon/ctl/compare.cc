#include "daemon/ctl/compare.h"

#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stop_token>
#include <thread>

#include "daemon/config/cli.h"
#include "daemon/config/run_options.h"
#include "daemon/config/train_flags.h"
#include "daemon/ctl/child_process.h"
#include "daemon/ctl/compare_args.h"
#include "daemon/ctl/compare_byzantine.h"
#include "daemon/ctl/compare_byzantine_preset.h"
#include "daemon/ctl/compare_entry.h"
#include "daemon/ctl/compare_hosts.h"
#include "daemon/ctl/compare_presets.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/ctl/compare_stragglers.h"
#include "daemon/ctl/compare_wan.h"
#include "daemon/ctl/mean_curve.h"
#include "daemon/ctl/prometheus_targets.h"
#include "daemon/ctl/worker_watch.h"
#include "daemon/observe/metrics_log.h"
#include "proto/gossip.pb.h"
#include "trainer/dataset.h"
#include "trainer/models.h"

namespace gossipd::daemon {
namespace {

namespace fs = std::filesystem;

TrainFlags train_flags(const CompareOptions& o) {
  TrainFlags f;
  f.model = o.model;
  f.hidden = o.hidden;
  f.epochs = o.epochs;
  f.batch = o.batch;
  f.lr = o.lr;
  f.optimizer = o.optimizer;
  f.lars_eta = o.lars_eta;
  f.warmup_epochs = o.warmup_epochs;
  f.seed = o.seed;
  f.threads = o.threads;
  f.train_limit = o.train_limit;
  f.test_limit = o.test_limit;
  f.data = o.data;
  return f;
}

class Comparison {
 public:
  Comparison(const CompareOptions& o, std::stop_token stop, const NetnsHosts* hosts)
      : o_(o), stop_(stop), gossipd_(find_gossipd(o)), hosts_(hosts), summary_(compare_summary_header(o)) {}

  proto::CompareResult run(const std::string& algo) { return run_until_bound(algo); }

  void run_all() {
    for (const auto& algo : o_.algos) {
      if (stop_.stop_requested()) break;
      *summary_.add_results() = run_until_bound(algo);
    }
  }

  void write_outputs() { write_compare_report(o_.out, summary_, o_.target, setup()); }

  bool stopped() const { return stop_.stop_requested(); }

  proto::CompareSummary& summary() { return summary_; }

 private:
  // Where worker k listens: its namespace's address, or a loopback port
  // picked for this protocol's run.
  std::string endpoint(int k) const {
    return hosts_ ? "tcp://" + hosts_->address(k) + ":7100"
                  : "tcp://127.0.0.1:" + std::to_string(ports_.at(static_cast<size_t>(k)));
  }
  std::string http_host(int k) const { return hosts_ ? hosts_->address(k) : "127.0.0.1"; }
  CompareEntry entry(const std::string& algo) const { return compare_entry(o_, algo); }
  // Steps per epoch of `algo`'s workers (the mode decides).
  size_t steps(const std::string& algo) const { return entry(algo).launch.steps_per_epoch; }

  std::vector<std::string> worker_argv(const std::string& algo, int i, const std::string& dir) {
    std::vector<std::string> endpoints;
    for (int k = 0; k < o_.workers; ++k) endpoints.push_back(endpoint(k));
    std::vector<std::string> a;
    if (hosts_) a = {hosts_->ip(), "netns", "exec", hosts_->netns(i)};  // execs gossipd: same pid
    a.insert(a.end(), {gossipd_, "run"});
    const auto flags = compare_run_args(o_, algo, i, endpoints, dir, http_host(i) + ":0");
    a.insert(a.end(), flags.begin(), flags.end());
    const auto patience = load_failure_timeout_args(o_.workers, std::thread::hardware_concurrency());
    a.insert(a.end(), patience.begin(), patience.end());
    return a;
  }

  // A loopback port free_ports found may be taken by another process before
  // a worker binds it; that run is repeated on fresh ports, twice at most.
  proto::CompareResult run_until_bound(const std::string& algo) {
    for (int attempt = 0;; ++attempt) {
      proto::CompareResult res = run_one(algo);
      if (hosts_ || attempt == 2 || res.status().find("Address already in use") == std::string::npos)
        return res;
      std::printf("%-10s a port was taken meanwhile: running it again on fresh ports\n", algo.c_str());
      std::fflush(stdout);
    }
  }

  proto::CompareResult run_one(const std::string& algo) {
    proto::CompareResult res = compare_entry_result(o_, algo);
    const std::string dir = fresh_entry_dir(o_, algo);
    if (!hosts_) ports_ = free_ports(o_.workers);
    std::vector<WatchedWorker> workers(static_cast<size_t>(o_.workers));
    for (int i = 0; i < o_.workers; ++i) {
      WatchedWorker& w = workers[static_cast<size_t>(i)];
      w.id = "w" + std::to_string(i);
      w.host = http_host(i);
      w.out = dir + "/" + w.id + ".log";
      w.err = dir + "/" + w.id + ".err";
      w.metrics = dir + "/" + w.id + ".jsonl";
      w.params = dir + "/" + w.id + ".params";
      w.control = dir + "/" + w.id + ".control";
      w.evictable = o_.evict_byzantine && o_.byzantine.values.count(static_cast<size_t>(i)) > 0;
      w.proc = std::make_unique<ChildProcess>(worker_argv(algo, i, dir), w.out, w.err);
    }
    WatchSpec spec{algo,      steps(algo) * static_cast<uint64_t>(o_.epochs),
                   o_.epochs, [&] { return best_mean_accuracy(algo); },
                   nullptr,   nullptr};
    spec.serving = [&](const std::vector<WatchedWorker>& serving) { announce_targets(algo, serving); };
    if (o_.stop_when)
      spec.end_early = [&](uint64_t round) { return o_.stop_when(entry_metrics_files(o_, algo), round); };
    const WatchEnd end = watch_workers(workers, spec, stop_, progress_);
    if (end == WatchEnd::kStopped) {
      res.set_status("stopped by signal");
      return res;
    }
    if (end == WatchEnd::kFailed) {
      res.set_status(failure(workers));
      std::printf("%-10s FAILED: %s\n", algo.c_str(), res.status().c_str());
      return res;
    }
    res.set_status("ok");
    std::vector<std::string> metrics, params;
    for (const auto& w : workers) {
      if (w.evictable) continue;  // --evict-byzantine: the attacker is no part of the cluster's model
      metrics.push_back(w.metrics), params.push_back(w.params);
    }
    summarize_compare_entry(o_, metrics, params, dir, res);
    return res;
  }

  // The entry's members as Prometheus targets (deploy/prometheus/), one
  // group per member so that each series names it (a file that cannot be
  // written is said, not fatal to the comparison), and the page of w0.
  void announce_targets(const std::string& algo, const std::vector<WatchedWorker>& workers) {
    std::vector<TargetGroup> groups;
    for (const auto& w : workers) {
      groups.push_back({{w.host + ":" + std::to_string(w.http_port)},
                        {{"cluster", "compare-" + entry_dir(algo)}, {"member", w.id}}});
    }
    try {
      write_prometheus_targets(o_.out + "/prometheus_targets.json", groups);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gossipctl compare: %s\n", e.what());
    }
    progress_.end();  // its line, on a terminal, ends before this one
    std::printf("%-10s watch it train: http://%s:%u/ (w0's page)\n", algo.c_str(), workers[0].host.c_str(),
                workers[0].http_port);
    std::fflush(stdout);
  }

  // The first worker that failed by itself (not one compare then killed), and how.
  static std::string failure(std::vector<WatchedWorker>& workers) {
    std::stable_partition(workers.begin(), workers.end(),
                          [](const WatchedWorker& w) { return w.proc->term_signal() == 0; });
    for (auto& w : workers) {
      if (!failed(w)) continue;
      return w.id + " exited with " +
             (w.proc->term_signal() ? "signal " + std::to_string(w.proc->term_signal())
                                    : "code " + std::to_string(w.proc->exit_code())) +
             ": " + last_line(read_file(w.err)) + " (see " + w.err + ")";
    }
    return "a worker failed";
  }

  double best_mean_accuracy(const std::string& algo) const {
    double best = 0;
    for (const CurvePoint& p : mean_curve(entry_metrics_files(o_, algo)))
      best = std::max(best, p.test_accuracy);
    return best;
  }

  std::string setup() const {
    if (!hosts_) return compare_setup(o_, " local workers (gossipd processes over TCP loopback)");
    std::string links = ")";
    if (o_.wan) links = "; a WAN: " + o_.wan->describe() + ")";
    if (!o_.bandwidth.empty()) links = ", " + o_.bandwidth + " per host)";
    return compare_setup(o_, " workers, each in its own network namespace on a bridge (tcp" + links);
  }

  const CompareOptions& o_;
  std::stop_token stop_;
  std::string gossipd_;
  const NetnsHosts* hosts_;  // null: local processes on loopback
  std::vector<uint16_t> ports_;

  proto::CompareSummary summary_;
  Progress progress_;
};

}  // namespace

proto::CompareResult compare_entry_result(const CompareOptions& o, const std::string& algo) {
  proto::CompareResult res;
  res.set_algo(algo);
  res.set_workers(static_cast<uint32_t>(o.workers));
  res.set_epochs(static_cast<uint32_t>(o.epochs));
  res.set_target_accuracy(o.target);
  return res;
}

std::string fresh_entry_dir(const CompareOptions& o, const std::string& algo) {
  const std::string dir = o.out + "/" + entry_dir(algo);
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(dir)) fs::remove(e.path());  // a rerun of this protocol only
  return dir;
}

proto::CompareSummary compare_summary_header(const CompareOptions& o) {
  proto::CompareSummary summary;
  summary.set_model(o.model);
  summary.set_workers(static_cast<uint32_t>(o.workers));
  summary.set_epochs(static_cast<uint32_t>(o.epochs));
  summary.set_batch(static_cast<uint32_t>(o.batch));
  summary.set_lr(o.lr);
  summary.set_segments(o.segments);
  summary.set_groups(static_cast<uint32_t>(o.groups));
  summary.set_seed(o.seed);
  summary.set_train_samples(compare_train_samples(o));
  summary.set_test_samples(o.test_limit > 0 ? std::min<size_t>(o.test_limit, 10000) : 10000);
  return summary;
}

double averaged_model_accuracy(const CompareOptions& o, const std::vector<std::string>& params_files) {
  for (const auto& f : params_files) {
    if (f.empty()) return -1;  // collect: the replicas live elsewhere
  }
  const TrainFlags flags = train_flags(o);
  trainer::Dataset test = trainer::load_fashion_mnist(data_dir(flags), trainer::Split::kTest, o.test_limit);
  trainer::Trainer t(trainer::make_model(model_options(flags), flags.seed), test, trainer_options(flags));
  auto params = t.model().params();
  std::vector<double> sum(params.size(), 0.0);
  for (const auto& f : params_files) {
    std::ifstream in(f, std::ios::binary);
    std::vector<float> p(params.size());
    in.read(reinterpret_cast<char*>(p.data()), static_cast<std::streamsize>(p.size() * sizeof(float)));
    if (!in) return -1;
    for (size_t i = 0; i < p.size(); ++i) sum[i] += p[i];
  }
  for (size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(sum[i] / params_files.size());
  return t.evaluate(test).accuracy;
}

void summarize_compare_entry(const CompareOptions& o, const std::vector<std::string>& metrics_files,
                             const std::vector<std::string>& params_files, const std::string& dir,
                             proto::CompareResult& res) {
  summarize_protocol(metrics_files, o.target, dir, res);
  res.set_averaged_model_accuracy(averaged_model_accuracy(o, params_files));
  std::printf("%-10s final mean acc %.4f  averaged model %.4f  to %.2f: %s  %.1f rounds/s (%.1f ms comm)\n",
              res.algo().c_str(), res.final_mean_accuracy(), res.averaged_model_accuracy(), o.target,
              time_to_target(res).c_str(), res.rounds_per_second(), res.comm_ms_per_round());
  std::fflush(stdout);
}

std::string compare_setup(const CompareOptions& o, const std::string& where) {
  std::string paced;
  for (const auto& algo : o.algos) {
    if (compare_entry(o, algo).launch.paced) paced += (paced.empty() ? ", " : " and ") + algo;
  }
  if (!paced.empty()) paced += " paced (--pace)";
  const proto::CompareSummary summary = compare_summary_header(o);
  std::ostringstream s;
  s << o.workers << where
    << (o.delay_ms > 0 ? ", " + std::to_string(o.delay_ms) + " ms injected latency per message"
                       : std::string())
    << step_delays_setup(o) << byzantine_setup(o)
    << (send_buffer_kb(o) > 0 ? ", " + std::to_string(send_buffer_kb(o)) + " KiB send buffers"
                              : std::string())
    << ", model " << o.model << (o.hidden.empty() ? std::string() : " --hidden " + join_widths(o.hidden))
    << ", " << o.epochs << " epochs of " << summary.train_samples()
    << " Fashion-MNIST training samples shared among them, batch " << o.batch << " per worker, learning rate "
    << o.lr << " (cosine"
    << (o.warmup_epochs > 0 ? ", " + format("%g", o.warmup_epochs) + " epochs of warm-up" : std::string())
    << ")" << (o.optimizer == "lars" ? ", LARS (eta " + format("%g", o.lars_eta) + ")" : std::string())
    << ", seed " << o.seed << ", segments " << o.segments
    << (o.groups > 1 ? ", crossover hierarchical in " + std::to_string(o.groups) + " groups"
        : o.groups == kAutoGroups
            ? ", crossover hierarchical in groups formed from measured round trips (--groups auto)"
            : "")
    << paced
    << (o.evals_per_epoch > 1
            ? ", test accuracy evaluated " + std::to_string(o.evals_per_epoch) + " times per epoch"
            : std::string())
    << "; test set " << summary.test_samples() << " samples.";
  return s.str();
}

std::vector<std::string> entry_metrics_files(const CompareOptions& o, const std::string& entry) {
  std::vector<std::string> files;
  for (int i = 0; i < o.workers; ++i)
    files.push_back(o.out + "/" + entry_dir(entry) + "/w" + std::to_string(i) + ".jsonl");
  return files;
}

proto::CompareResult run_compare_entry(const CompareOptions& o, const std::string& entry,
                                       const NetnsHosts* hosts, std::stop_token stop) {
  return Comparison(o, stop, hosts).run(entry);
}

int run_compare(const CompareOptions& given) {
  CompareOptions o = given;
  resolve_step_delays(o);
  resolve_byzantine(o);
  resolve_wan(o);
  std::stop_source stop;
  SignalWatcher signals(stop);
  check_compare_entries(o);
  check_compare_setup(o);
  const std::vector<PresetRun> configs = preset_runs(o);  // a preset's configurations checked too
  prepare_out_dir(o.out);
  proto::ComparePreset preset;
  preset.set_preset(o.preset);
  for (const auto& cfg : configs) {
    if (stop.stop_requested()) break;
    CompareOptions co = cfg.options;
    if (!cfg.name.empty()) {
      co.out = o.out + "/" + cfg.name;
      prepare_out_dir(co.out);
    }
    write_wan_topology(co);
    std::unique_ptr<NetnsHosts> hosts;
    if (co.netns) hosts = std::make_unique<NetnsHosts>(co.workers, co.bandwidth, co.wan.get());
    Comparison c(co, stop.get_token(), hosts.get());
    std::printf("gossipctl compare%s%s: %zu protocols x %d workers, batch %zu, %d epochs; output in %s\n",
                cfg.name.empty() ? "" : " ", cfg.name.c_str(), co.algos.size(), co.workers, co.batch,
                co.epochs, co.out.c_str());
    std::fflush(stdout);
    c.run_all();
    c.write_outputs();
    c.summary().set_config(cfg.name);
    *preset.add_runs() = c.summary();
  }
  if (!o.preset.empty()) {
    std::vector<PresetConfig> rows;
    for (const auto& c : configs)
      rows.push_back({c.name, c.options.workers, c.options.batch, c.options.lr, c.x});
    write_preset_report(o.out, preset, preset_description(o), preset_axis(o), o.target, rows);
    if (o.preset == "byzantine")
      std::ofstream(o.out + "/report.md", std::ios::app) << "\n" << byzantine_table(o.out, configs);
  }
  std::printf("gossipctl compare: report in %s/report.md%s\n", o.out.c_str(),
              o.preset.empty() ? (" and " + o.out + "/report.html (summary.json, plots *.svg)").c_str()
                               : " (one report per configuration below it)");
  return stop.stop_requested() ? kExitFailure : kExitOk;
}

}  // namespace gossipd::daemon
