#include "daemon/ctl/soak.h"

#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "daemon/ctl/child_process.h"
#include "daemon/ctl/compare_args.h"
#include "daemon/ctl/compare_byzantine.h"
#include "daemon/ctl/compare_flags.h"
#include "daemon/ctl/compare_hosts.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/ctl/compare_stragglers.h"
#include "daemon/ctl/compare_wan.h"
#include "daemon/ctl/soak_plan.h"
#include "daemon/ctl/soak_record.h"
#include "daemon/observe/http_client.h"
#include "daemon/observe/message_json.h"
#include "daemon/observe/metrics_log.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kSettleS = 3;        // the view's bound: the failure timeout and this
constexpr double kStopChurnAt = 0.9;  // of the rounds: no change once the slowest is past it
constexpr std::chrono::milliseconds kStatusTimeout{2000};

struct Slot {
  std::string id;
  std::unique_ptr<ChildProcess> proc;
  std::string control;
  uint16_t http_port = 0;
  bool killed = false;
  bool left = false;  // ended by itself
};

void check_soak(const SoakOptions& so) {
  const CompareOptions& o = so.compare;
  if (o.algos.size() != 1) throw UsageError("gossipctl soak runs one protocol: give --algos with one entry");
  if (!o.topology.empty())
    throw UsageError("--topology: gossipctl soak writes its own WAN (--preset wan's links over its hosts)");
  if (!o.preset.empty() && o.preset != "wan")
    throw UsageError("--preset " + o.preset + " is compare's; gossipctl soak takes --preset wan alone");
  if (o.preset == "wan" && (!o.netns || !o.bandwidth.empty() || o.workers < 4))
    throw UsageError("--preset wan: give --netns (as root), no --bandwidth, and --workers 4 or more");
  if (!(so.churn_every_s >= 0) || so.churn_events < 0)
    throw UsageError("--churn-every-s and --churn-events must be 0 or more");
}

class Soak {
 public:
  Soak(const SoakOptions& so, std::vector<ChurnEvent> plan, std::stop_token stop)
      : so_(so),
        o_(so.compare),
        plan_(std::move(plan)),
        stop_(stop),
        gossipd_(find_gossipd(o_)),
        patience_(load_failure_timeout_args(o_.workers, std::thread::hardware_concurrency())),
        record_((patience_.empty() ? 3.0 : std::stod(patience_[1]) / 1e3) + kSettleS),
        dir_(o_.out + "/" + entry_dir(o_.algos[0])) {
    const int hosts = o_.workers + static_cast<int>(plan_.size());
    if (o_.netns) hosts_ = std::make_unique<NetnsHosts>(hosts, o_.bandwidth, o_.wan.get());
    if (!o_.netns) ports_ = free_ports(hosts);
    slots_.reserve(static_cast<size_t>(hosts));
    std::filesystem::create_directories(dir_);
  }

  void run() {
    for (int i = 0; i < o_.workers; ++i) slot_of_.push_back(i), start(i, args(i, i));
    const uint64_t total = compare_entry(o_, o_.algos[0]).launch.steps_per_epoch * o_.epochs;
    size_t next = 0;
    std::optional<double>
        training;  // since every member first trained: no change before (the start-up barrier)
    while (!stop_.stop_requested()) {
      const double t = now();
      const uint64_t slowest = sweep(t);
      if (!training && record_.saw_everyone_training()) training = t;
      if (training && next < plan_.size() && so_.churn_every_s > 0 &&
          t >= *training + so_.churn_every_s * static_cast<double>(next + 1) &&
          slowest < kStopChurnAt * total)
        churn(plan_[next++], t);
      for (Slot& s : slots_) {
        if (!s.killed && !s.left && !running(s)) s.left = true, record_.left(s.id);
      }
      if (std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return running(s); })) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    for (Slot& s : slots_) s.proc->signal(SIGTERM);
    for (Slot& s : slots_) s.proc->wait(std::chrono::seconds(10));
    events_ = next;
  }

  void report() const;

 private:
  static bool running(const Slot& s) { return !s.killed && !s.proc->wait(std::chrono::milliseconds(0)); }
  double now() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  std::string endpoint(int k) const {
    return hosts_ ? "tcp://" + hosts_->address(k) + ":7100"
                  : "tcp://127.0.0.1:" + std::to_string(ports_.at(static_cast<size_t>(k)));
  }
  std::string http_host(int k) const { return hosts_ ? hosts_->address(k) : "127.0.0.1"; }

  // Worker `k`'s argv: worker `as`'s flags (a joiner takes its line's), its
  // own id, endpoint and files, and for --peers --join `contacts` (when
  // given: the first, then the others should it die first).
  std::vector<std::string> args(int k, int as, const std::vector<int>& contacts = {}) const {
    std::vector<std::string> endpoints;
    for (int i = 0; i < o_.workers; ++i) endpoints.push_back(endpoint(i == as ? k : i));
    std::vector<std::string> a = compare_run_args(o_, o_.algos[0], as, endpoints, dir_, http_host(k) + ":0");
    const std::string from = wan_host_name(static_cast<size_t>(as)),
                      to = wan_host_name(static_cast<size_t>(k));
    for (std::string& v : a) {
      if (v == from) v = to;
      const auto at = v.find("/" + from + ".");
      if (at != std::string::npos) v.replace(at + 1, from.size(), to);
    }
    if (!contacts.empty()) {
      const auto peers = std::find(a.begin(), a.end(), "--peers");
      a.erase(peers, peers + 2);
      std::string join;
      for (int c : contacts) join += (join.empty() ? "" : ",") + endpoint(c);
      a.insert(a.end(), {"--join", join});
    }
    a.insert(a.end(), patience_.begin(), patience_.end());
    a.insert(a.begin(), {gossipd_, "run"});
    if (hosts_) a.insert(a.begin(), {hosts_->ip(), "netns", "exec", hosts_->netns(k)});
    return a;
  }

  void start(int k, std::vector<std::string> argv) {
    Slot s;
    s.id = wan_host_name(static_cast<size_t>(k));
    s.control = dir_ + "/" + s.id + ".control";
    s.proc = std::make_unique<ChildProcess>(std::move(argv), dir_ + "/" + s.id + ".log",
                                            dir_ + "/" + s.id + ".err");
    record_.started(s.id);
    slots_.push_back(std::move(s));
  }

  void churn(const ChurnEvent& e, double t) {
    Slot& victim = slots_.at(static_cast<size_t>(e.victim));  // (start() below may move it)
    const std::string id = victim.id;
    victim.proc->signal(SIGKILL);
    victim.proc->wait(std::chrono::seconds(5));
    victim.killed = true;
    record_.killed(id, t);
    std::vector<int> contacts{e.contact};
    for (size_t k = 0; k < slots_.size(); ++k) {
      if (running(slots_[k]) && static_cast<int>(k) != e.contact) contacts.push_back(static_cast<int>(k));
    }
    slot_of_.push_back(slot_of_.at(static_cast<size_t>(e.victim)));  // its flags: the first of its line's
    start(e.joiner, args(e.joiner, slot_of_.back(), contacts));
    std::printf("soak: %.1f s: killed %s, %s joins through %s\n", t, id.c_str(), slots_.back().id.c_str(),
                wan_host_name(static_cast<size_t>(e.contact)).c_str());
    std::fflush(stdout);
  }

  // Every live member's /status into the record, asked of all at once (one
  // by one, 32 members on a loaded machine took 10 to 30 s a sweep); the
  // slowest round seen.
  uint64_t sweep(double t) {
    record_.start_sweep(t);
    std::vector<std::pair<size_t, std::future<std::string>>> asked;
    for (size_t k = 0; k < slots_.size(); ++k) {
      Slot& s = slots_[k];
      if (!running(s)) continue;
      if (s.http_port == 0) {
        for (const auto& r : read_control_records(s.control))
          if (r.event() == "listening") s.http_port = static_cast<uint16_t>(r.http_port());
      }
      if (s.http_port == 0) continue;
      asked.emplace_back(k, std::async(std::launch::async, http_get, http_host(static_cast<int>(k)),
                                       s.http_port, std::string("/status"), kStatusTimeout));
    }
    uint64_t slowest = UINT64_MAX;
    for (auto& [k, answer] : asked) {
      proto::Status st;
      if (!from_json(answer.get(), st)) continue;
      record_.saw(slots_[k].id, st.round(), st.state(), {st.members().begin(), st.members().end()});
      if (st.state() == "training") slowest = std::min(slowest, st.round());
    }
    record_.end_sweep();
    record_.rss(t, long_lived_rss());
    return slowest == UINT64_MAX ? 0 : slowest;
  }

  // The resident bytes of the members no event kills, together.
  double long_lived_rss() const {
    double sum = 0;
    for (int k = 0; k < o_.workers; ++k) {
      if (std::any_of(plan_.begin(), plan_.end(), [&](const ChurnEvent& e) { return e.victim == k; }))
        continue;
      std::ifstream in("/proc/" + std::to_string(slots_.at(static_cast<size_t>(k)).proc->pid()) + "/status");
      for (std::string line; std::getline(in, line);) {
        if (line.rfind("VmRSS:", 0) == 0) sum += std::stod(line.substr(6)) * 1024;
      }
    }
    return sum;
  }

  const SoakOptions& so_;
  const CompareOptions& o_;
  std::vector<ChurnEvent> plan_;
  std::stop_token stop_;
  std::string gossipd_;
  std::vector<std::string> patience_;
  SoakRecord record_;
  std::string dir_;
  std::unique_ptr<NetnsHosts> hosts_;
  std::vector<uint16_t> ports_;
  std::vector<Slot> slots_;
  std::vector<int> slot_of_;  // each member's place among the --workers (a joiner its victim's)
  size_t events_ = 0;
  Clock::time_point start_ = Clock::now();
};

void Soak::report() const {
  std::vector<double> accuracy;
  std::string failed;
  for (const Slot& s : slots_) {
    if (s.killed) continue;
    if (s.proc->exit_code() != 0) failed += (failed.empty() ? "" : ", ") + s.id;
    for (const auto& r : read_control_records(s.control))
      if (r.event() == "done") accuracy.push_back(r.status().test_accuracy());
  }
  double mean = 0;
  for (double a : accuracy) mean += a / static_cast<double>(accuracy.size());
  std::string worst_id;
  double worst_gap = 0;
  for (const auto& [id, gap] : record_.gaps())
    if (gap > worst_gap) worst_gap = gap, worst_id = id;
  double slowest_view = 0;
  size_t unsettled = 0;
  std::string settled;  // each change's seconds to settle
  for (const auto& c : record_.changes()) {
    if (!c.converged || *c.converged > record_.bound()) ++unsettled;
    slowest_view = std::max(slowest_view, c.converged.value_or(-1));
    settled +=
        (settled.empty() ? "" : " ") + (c.converged ? format("%.1f", *c.converged) : std::string("never"));
  }
  std::string evicted;
  for (const auto& id : record_.falsely_evicted()) evicted += " " + id;
  // Memory while every member trained: its second minute against its last.
  const double end = now(), trained = record_.last_full_sweep();
  const auto second = record_.mean_rss(60, 120), last = record_.mean_rss(trained - 60, trained);
  const double rss_ratio = second && last && trained >= 180 ? *last / *second : -1;
  std::ostringstream json;
  json << "{\"algo\":\"" << o_.algos[0] << "\",\"members\":" << o_.workers
       << ",\"churn_every_s\":" << so_.churn_every_s << ",\"changes\":" << events_ << ",\"seconds\":" << end
       << ",\"survivors_done\":" << accuracy.size() << ",\"failed\":\"" << failed
       << "\",\"final_mean_accuracy\":" << mean << ",\"max_round_gap_s\":" << worst_gap
       << ",\"max_round_gap_member\":\"" << worst_id << "\",\"view_bound_s\":" << record_.bound()
       << ",\"slowest_view_s\":" << slowest_view << ",\"changes_unsettled\":" << unsettled
       << ",\"false_evictions\":" << record_.falsely_evicted().size()
       << ",\"split_view_at_end\":" << (record_.split_at_end() ? "true" : "false")
       << ",\"rss_last_over_second_minute\":" << rss_ratio << "}";
  write_text_file(o_.out + "/soak.json", json.str() + "\n");
  std::ostringstream md;
  md << "# gossipctl soak: " << o_.algos[0] << ", " << o_.workers << " members"
     << (o_.wan ? " on a WAN (" + o_.wan->describe() + ")"
                : std::string(hosts_ ? " in namespaces" : " on loopback"))
     << "\n\n- " << events_ << " changes (a kill and a join every " << so_.churn_every_s << " s) in "
     << format("%.0f", end) << " s\n- survivors done: " << accuracy.size()
     << (failed.empty() ? "" : "; failed: " + failed) << "; final mean test accuracy " << format("%.4f", mean)
     << "\n- longest gap between two rounds: " << format("%.1f", worst_gap) << " s (" << worst_id
     << ")\n- views: the slowest to settle after a change " << format("%.1f", slowest_view) << " s; "
     << unsettled << " not settled within " << format("%.1f", record_.bound())
     << " s (failure timeout + 3 s); each: " << settled
     << "\n- false evictions: " << record_.falsely_evicted().size() << evicted
     << "; split view at the end: " << (record_.split_at_end() ? "yes" : "no")
     << "\n- resident memory of the members never killed, last minute all trained over the second: "
     << (rss_ratio < 0 ? std::string("n/a (under 3 minutes)") : format("%.3f", rss_ratio)) << "\n";
  write_text_file(o_.out + "/report.md", md.str());
  std::printf("%s", md.str().c_str());
}

}  // namespace

CLI::App* add_soak_command(CLI::App& app, SoakOptions& so) {
  CLI::App* cmd = app.add_subcommand(
      "soak", "Train one protocol while members are killed and new ones join, and measure what it costs");
  add_compare_flags(cmd, so.compare, kMaxCompareWorkers);
  add_step_delays_flag(cmd, so.compare);
  cmd->add_option("--churn-every-s", so.churn_every_s,
                  "Kill one live member and start a new one (joining) this often; 0: no churn")
      ->capture_default_str();
  cmd->add_option("--churn-events", so.churn_events, "Kills (and joins) at most")->capture_default_str();
  return cmd;
}

int run_soak(const SoakOptions& given) {
  SoakOptions so = given;
  CompareOptions& o = so.compare;
  check_soak(so);
  resolve_step_delays(o);
  resolve_byzantine(o);
  check_compare_entries(o);
  std::stop_source stop;
  SignalWatcher signals(stop);
  const auto plan = plan_churn(o.workers, so.churn_every_s > 0 ? so.churn_events : 0, o.seed);
  if (o.preset == "wan")
    o.wan = std::make_shared<WanTopology>(parse_wan_topology(soak_wan_text(o.workers, plan), "soak"));
  prepare_out_dir(o.out);
  write_wan_topology(o);
  Soak soak(so, plan, stop.get_token());
  soak.run();
  soak.report();
  return stop.stop_requested() ? kExitFailure : kExitOk;
}

}  // namespace gossipd::daemon
