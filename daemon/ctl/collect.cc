// gossipctl collect: the compare report from daemons already running.
#include "daemon/ctl/collect.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <stop_token>
#include <thread>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/observe/http_client.h"
#include "daemon/observe/metrics_log.h"
#include "proto/gossip.pb.h"

namespace gossipd::daemon {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A string usable as one file name: [A-Za-z0-9_.-] kept, the rest '_', and
// never "." or "..".
std::string safe_name(const std::string& s) {
  std::string out;
  for (char ch : s.substr(0, 100)) {
    out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.' ? ch : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

// gossipctl collect: polls running daemons' /status, records an epoch line
// per daemon whenever its epoch advances, until every daemon is done (or
// gone for 30 s, or stop), then summarizes per protocol like run_all().
proto::CompareSummary collect(const std::vector<std::pair<std::string, uint16_t>>& hosts,
                              std::chrono::milliseconds poll, const std::string& out, double target,
                              std::stop_token stop) {
  struct Seen {
    std::string id, algo;
    uint32_t epoch = 0;
    uint32_t epochs_total = 0;
    bool finished = false;
    Clock::time_point last_answer = Clock::now();
  };
  std::vector<Seen> seen(hosts.size());
  const auto start = Clock::now();
  for (;;) {
    size_t finished = 0;
    uint64_t min_round = ~0ull;
    for (size_t i = 0; i < hosts.size(); ++i) {
      Seen& h = seen[i];
      if (h.finished) {
        ++finished;
        continue;
      }
      const std::string body = http_get(hosts[i].first, hosts[i].second, "/status");
      proto::Status st;
      if (body.empty() || !from_json(body, st)) {
        if (h.epochs_total > 0 && h.epoch >= h.epochs_total) {
          h.finished = true;  // it trained every epoch and exited
        } else if (Clock::now() - h.last_answer > std::chrono::seconds(30)) {
          std::printf("collect: %s:%u silent for 30 s; no longer polled\n", hosts[i].first.c_str(),
                      hosts[i].second);
          h.finished = true;
        }
        continue;
      }
      h.last_answer = Clock::now();
      // Names from the network become file names: nothing but a plain name.
      h.id = safe_name(st.id().empty() ? hosts[i].first + "_" + std::to_string(hosts[i].second) : st.id());
      h.algo = safe_name(st.algo().empty() ? "unknown" : st.algo());
      h.epochs_total = st.epochs_total();
      min_round = std::min<uint64_t>(min_round, st.round());
      if (st.epoch() > h.epoch) {
        h.epoch = st.epoch();
        proto::EpochRecord r;
        r.set_epoch(st.epoch());
        r.set_loss(st.loss());
        r.set_test_loss(st.test_loss());
        r.set_test_accuracy(st.test_accuracy());
        r.set_wall_seconds(st.uptime_seconds());
        r.set_consensus_distance(st.consensus_distance());
        r.set_round(st.round());
        r.set_bytes_sent(st.bytes_sent());
        r.set_segments_skipped(st.segments_skipped());
        r.set_rounds_per_second(st.rounds_per_second());
        r.set_comm_ms_per_round(st.comm_ms_per_round());
        fs::create_directories(out + "/" + h.algo);
        JsonLinesWriter(out + "/" + h.algo + "/" + h.id + ".jsonl").write(r);
      }
      if (st.state() == "done" || st.state() == "stopped" || st.state() == "failed") h.finished = true;
    }
    if (finished == hosts.size() || stop.stop_requested()) break;
    std::printf("collect: %zu/%zu daemons finished, slowest at round %llu, %.0f s\n", finished, hosts.size(),
                static_cast<unsigned long long>(min_round == ~0ull ? 0 : min_round),
                std::chrono::duration<double>(Clock::now() - start).count());
    std::fflush(stdout);
    std::this_thread::sleep_for(poll);
  }
  std::map<std::string, std::vector<std::string>> by_algo;  // algo -> epoch files
  std::map<std::string, uint32_t> epochs;
  for (const auto& h : seen) {
    if (h.id.empty()) continue;
    epochs[h.algo] = std::max(epochs[h.algo], h.epoch);
    by_algo[h.algo].push_back(out + "/" + h.algo + "/" + h.id + ".jsonl");
  }
  proto::CompareSummary summary;
  summary.set_workers(static_cast<uint32_t>(hosts.size()));
  for (auto& [algo, files] : by_algo) {
    proto::CompareResult res;
    res.set_algo(algo);
    res.set_workers(static_cast<uint32_t>(files.size()));
    res.set_target_accuracy(target);
    res.set_status("ok");
    summarize_protocol(files, target, out + "/" + algo, res);
    res.set_averaged_model_accuracy(-1);  // the replicas are not here
    res.set_epochs(epochs[algo]);
    *summary.add_results() = res;
  }
  return summary;
}

}  // namespace

int run_collect(const CollectOptions& c) {
  std::stop_source stop;
  SignalWatcher signals(stop);
  require_gnuplot();
  std::ifstream in(c.hosts);
  if (!in) throw UsageError("cannot read --hosts " + c.hosts);
  std::vector<std::pair<std::string, uint16_t>> hosts;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    line = line.substr(0, line.find('#'));
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (line.empty()) continue;
    std::smatch m;
    if (!std::regex_match(line, m, std::regex("([A-Za-z0-9_.-]+|\\[[0-9a-fA-F:]+\\]):([0-9]{1,5})")) ||
        std::stoi(m[2]) > 65535) {
      throw UsageError(c.hosts + ":" + std::to_string(n) + ": '" + line +
                       "' is not HOST:PORT (a daemon's --http)");
    }
    std::string host = m[1];
    if (host.front() == '[') host = host.substr(1, host.size() - 2);
    hosts.emplace_back(host, static_cast<uint16_t>(std::stoi(m[2])));
  }
  if (hosts.empty()) throw UsageError("--hosts " + c.hosts + " lists no daemon (one HOST:PORT per line)");
  prepare_out_dir(c.out);
  const proto::CompareSummary summary =
      collect(hosts, std::chrono::milliseconds(c.poll_ms), c.out, c.target, stop.get_token());
  write_compare_report(
      c.out, summary, c.target,
      std::to_string(hosts.size()) +
          " running daemons, read through their /status (gossipctl collect); each epoch line is "
          "the daemon's state when the collector saw its epoch advance.");
  std::printf("gossipctl collect: report in %s/report.md and %s/report.html\n", c.out.c_str(), c.out.c_str());
  return kExitOk;
}

CLI::App* add_collect_command(CLI::App& app, CollectOptions& c) {
  CLI::App* cmd = app.add_subcommand("collect", "The compare report from daemons already running elsewhere");
  cmd->add_option("--hosts", c.hosts, "File with one HOST:PORT (a daemon's --http) per line; # comments")
      ->required();
  cmd->add_option("--out", c.out, "Directory for the metrics, summary.json, plots and report")->required();
  cmd->add_option("--target", c.target, "Accuracy whose time-to is reported")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--poll-ms", c.poll_ms, "How often each /status is read")
      ->check(CLI::Range(50, 600000))
      ->capture_default_str();
  return cmd;
}

}  // namespace gossipd::daemon
