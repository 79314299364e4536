#include "daemon/compare.h"

#include <asio.hpp>
#include <google/protobuf/util/json_util.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <stop_token>
#include <thread>

#include "daemon/child_process.h"
#include "daemon/cli.h"
#include "daemon/http_client.h"
#include "daemon/metrics_log.h"
#include "daemon/train_flags.h"
#include "daemon/training_loop.h"
#include "proto/gossip.pb.h"
#include "trainer/dataset.h"
#include "trainer/models.h"

namespace gossipd::daemon {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kAlgos{"crossover", "sgp", "osgp", "allreduce"};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string find_gossipd(const CompareOptions& o) {
  if (!o.gossipd.empty()) return o.gossipd;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "gossipd").string();
}

bool on_path(const std::string& program) {
  const char* path = getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    if (!d.empty() && access((fs::path(d) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Loopback ports for the workers to bind, below Linux's ephemeral range
// (32768 and up): the workers' own port-0 binds (their HTTP servers) and
// outgoing connections take ephemeral ports, so they can never take these.
// Each is checked free by binding it; all are held together, so they differ.
std::vector<uint16_t> free_ports(int n) {
  asio::io_context io;
  std::vector<asio::ip::tcp::acceptor> held;
  std::vector<uint16_t> ports;
  const int span = 32000 - 20000;
  const int start = static_cast<int>(Clock::now().time_since_epoch().count() % span);
  for (int k = 0; k < span && static_cast<int>(ports.size()) < n; ++k) {
    const auto port = static_cast<uint16_t>(20000 + (start + k) % span);
    asio::ip::tcp::acceptor a(io);
    asio::error_code ec;
    a.open(asio::ip::tcp::v4(), ec);
    if (!ec) a.bind(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (ec) continue;
    held.push_back(std::move(a));
    ports.push_back(port);
  }
  if (static_cast<int>(ports.size()) < n) throw std::runtime_error("no free loopback ports in 20000-31999");
  return ports;
}

// One network namespace per worker, each with a veth into a private bridge
// and its own address 10.213.S.(i+1)/24 (S from our pid, so two runs do not
// collide); the bridge has .254, so gossipctl reaches every worker's /status.
// With a rate, a tbf qdisc caps both ends of every veth. Everything is
// deleted in the destructor (also on errors and Ctrl-C).
class NetnsHosts {
 public:
  NetnsHosts(int hosts, const std::string& rate) : tag_(std::to_string(getpid() % 100000)) {
    subnet_ = "10.213." + std::to_string(getpid() % 250) + ".";
    try {
      sh("ip link add " + bridge() + " type bridge");
      sh("ip addr add " + subnet_ + "254/24 dev " + bridge());
      sh("ip link set " + bridge() + " up");
      for (int i = 0; i < hosts; ++i) {
        const std::string ns = netns(i), veth = "gd" + tag_ + "v" + std::to_string(i);
        sh("ip netns add " + ns);
        namespaces_.push_back(ns);
        sh("ip link add " + veth + " type veth peer name " + veth + "p");
        sh("ip link set " + veth + "p netns " + ns);
        sh("ip -n " + ns + " link set " + veth + "p name eth0");
        sh("ip -n " + ns + " addr add " + address(i) + "/24 dev eth0");
        sh("ip -n " + ns + " link set eth0 up");
        sh("ip -n " + ns + " link set lo up");
        sh("ip link set " + veth + " master " + bridge());
        sh("ip link set " + veth + " up");
        if (!rate.empty()) {
          const std::string tbf = " root tbf rate " + rate + " burst 256kb latency 400ms";
          sh("tc qdisc add dev " + veth + tbf);
          sh("ip netns exec " + ns + " tc qdisc add dev eth0" + tbf);
        }
      }
    } catch (...) {
      cleanup();
      throw;
    }
  }
  ~NetnsHosts() { cleanup(); }
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  std::string netns(int i) const { return "gd" + tag_ + "w" + std::to_string(i); }
  std::string address(int i) const { return subnet_ + std::to_string(i + 1); }
  std::string bridge_address() const { return subnet_ + "254"; }

 private:
  std::string bridge() const { return "gdbr" + tag_; }
  static void sh(const std::string& cmd) {
    if (std::system((cmd + " 2>/dev/null").c_str()) != 0) {
      throw UsageError("--netns: '" + cmd + "' failed (run as root, with iproute2 and a kernel with netns and tbf)");
    }
  }
  void cleanup() {
    // Deleting a namespace deletes its end of the veth, and so the pair.
    for (size_t i = 0; i < namespaces_.size(); ++i) {
      // The kernel frees a deleted namespace's veth asynchronously: delete our end now.
      std::system(("ip link del gd" + tag_ + "v" + std::to_string(i) + " 2>/dev/null").c_str());
      std::system(("ip netns del " + namespaces_[i] + " 2>/dev/null").c_str());
    }
    namespaces_.clear();
    std::system(("ip link del " + bridge() + " 2>/dev/null").c_str());
  }

  std::string tag_, subnet_;
  std::vector<std::string> namespaces_;
};

struct Worker {
  std::string id;
  std::string host;  // where its /status answers
  std::unique_ptr<ChildProcess> proc;
  std::string out, err, metrics, params;
  uint16_t http_port = 0;
};

// One progress line: protocol, round, epoch, best mean accuracy so far, elapsed, ETA.
class Progress {
 public:
  Progress() : tty_(isatty(STDOUT_FILENO) != 0) {}
  void show(const std::string& algo, uint64_t round, uint64_t total, uint32_t epoch, int epochs, double best,
            double elapsed) {
    const double eta = round > 0 && round < total ? elapsed * static_cast<double>(total - round) / round : 0;
    char line[256];
    std::snprintf(line, sizeof line, "%-10s round %6llu/%-6llu epoch %u/%d  best mean acc %.4f  %6.1f s  ETA %5.0f s",
                  algo.c_str(), static_cast<unsigned long long>(round), static_cast<unsigned long long>(total), epoch,
                  epochs, best, elapsed, eta);
    if (tty_) {
      std::printf("\r\033[K%s", line);
      std::fflush(stdout);
    } else if (epoch != last_epoch_ || elapsed - last_print_ >= 10) {  // plain lines: per epoch, or every 10 s
      std::printf("%s\n", line);
      std::fflush(stdout);
      last_epoch_ = epoch;
      last_print_ = elapsed;
    }
  }
  void end() {
    if (tty_) std::printf("\n");
    last_epoch_ = ~0u;
    last_print_ = -1e9;
  }

 private:
  bool tty_;
  uint32_t last_epoch_ = ~0u;
  double last_print_ = -1e9;
};

std::vector<proto::EpochRecord> read_records(const std::string& path) {
  std::vector<proto::EpochRecord> out;
  std::ifstream in(path);
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  for (std::string line; std::getline(in, line);) {
    proto::EpochRecord r;
    if (!line.empty() && google::protobuf::util::JsonStringToMessage(line, &r, opts).ok()) out.push_back(r);
  }
  return out;
}

uint64_t json_uint(const std::string& json, const std::string& field) {
  std::smatch m;
  if (!std::regex_search(json, m, std::regex("\"" + field + "\":\"?([0-9]+)"))) return 0;
  return std::stoull(m[1]);
}

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

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

TrainFlags train_flags(const CompareOptions& o) {
  TrainFlags f;
  f.model = o.model;
  f.epochs = o.epochs;
  f.batch = o.batch;
  f.lr = o.lr;
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
      : o_(o), stop_(stop), gossipd_(find_gossipd(o)), flags_(train_flags(o)), hosts_(hosts) {
    const size_t train_size = o.train_limit > 0 ? std::min<size_t>(o.train_limit, 60000) : 60000;
    steps_ = TrainingLoop::steps_per_epoch(train_size, static_cast<size_t>(o.workers), o.batch);
    summary_.set_model(o.model);
    summary_.set_workers(static_cast<uint32_t>(o.workers));
    summary_.set_epochs(static_cast<uint32_t>(o.epochs));
    summary_.set_batch(static_cast<uint32_t>(o.batch));
    summary_.set_lr(o.lr);
    summary_.set_segments(o.segments);
    summary_.set_groups(static_cast<uint32_t>(o.groups));
    summary_.set_seed(o.seed);
    summary_.set_train_samples(train_size);
    summary_.set_test_samples(o.test_limit > 0 ? std::min<size_t>(o.test_limit, 10000) : 10000);
  }

  void run_all() {
    for (const auto& algo : o_.algos) {
      if (stop_.stop_requested()) break;
      *summary_.add_results() = run_one(algo);
    }
  }

  void write_outputs() {
    write_text(o_.out + "/summary.json", to_json(summary_) + "\n");
    plot();
    write_report();
  }

  bool stopped() const { return stop_.stop_requested(); }

  // gossipctl collect: polls running daemons' /status, records an epoch line
  // per daemon whenever its epoch advances, until every daemon is done (or
  // gone for 30 s, or stop), then summarizes per protocol like run_all().
  void collect(const std::vector<std::pair<std::string, uint16_t>>& hosts, std::chrono::milliseconds poll) {
    struct Seen {
      std::string id, algo;
      uint32_t epoch = 0;
      uint32_t epochs_total = 0;
      bool finished = false;
      Clock::time_point last_answer = Clock::now();
    };
    std::vector<Seen> seen(hosts.size());
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = true;
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
        if (body.empty() || !google::protobuf::util::JsonStringToMessage(body, &st, opts).ok()) {
          if (h.epochs_total > 0 && h.epoch >= h.epochs_total) {
            h.finished = true;  // it trained every epoch and exited
          } else if (Clock::now() - h.last_answer > std::chrono::seconds(30)) {
            std::printf("collect: %s:%u silent for 30 s; no longer polled\n", hosts[i].first.c_str(), hosts[i].second);
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
          fs::create_directories(o_.out + "/" + h.algo);
          JsonLinesWriter(o_.out + "/" + h.algo + "/" + h.id + ".jsonl").write(r);
        }
        if (st.state() == "done" || st.state() == "stopped" || st.state() == "failed") h.finished = true;
      }
      if (finished == hosts.size() || stop_.stop_requested()) break;
      std::printf("collect: %zu/%zu daemons finished, slowest at round %llu, %.0f s\n", finished, hosts.size(),
                  static_cast<unsigned long long>(min_round == ~0ull ? 0 : min_round), seconds_since(start));
      std::fflush(stdout);
      std::this_thread::sleep_for(poll);
    }
    std::map<std::string, std::vector<Worker>> by_algo;
    std::map<std::string, uint32_t> epochs;
    for (const auto& h : seen) {
      if (h.id.empty()) continue;
      epochs[h.algo] = std::max(epochs[h.algo], h.epoch);
      Worker w;
      w.id = h.id;
      w.metrics = o_.out + "/" + h.algo + "/" + h.id + ".jsonl";
      by_algo[h.algo].push_back(std::move(w));
    }
    for (auto& [algo, workers] : by_algo) {
      proto::CompareResult res;
      res.set_algo(algo);
      res.set_workers(static_cast<uint32_t>(workers.size()));
      res.set_target_accuracy(o_.target);
      res.set_status("ok");
      summarize(workers, o_.out + "/" + algo, res);
      res.set_epochs(epochs[algo]);
      *summary_.add_results() = res;
    }
    summary_.set_workers(static_cast<uint32_t>(hosts.size()));
  }
  proto::CompareSummary& summary() { return summary_; }

 private:
  // Where worker k listens: its namespace's address, or a loopback port
  // picked for this protocol's run.
  std::string endpoint(int k) const {
    return hosts_ ? "tcp://" + hosts_->address(k) + ":7100"
                  : "tcp://127.0.0.1:" + std::to_string(ports_.at(static_cast<size_t>(k)));
  }
  std::string http_host(int k) const { return hosts_ ? hosts_->address(k) : "127.0.0.1"; }

  std::vector<std::string> worker_argv(const std::string& algo, int i, const std::string& dir) {
    std::string peers;
    for (int k = 0; k < o_.workers; ++k) {
      peers += (k ? "," : "") + ("w" + std::to_string(k)) + "=" + endpoint(k);
    }
    const std::string id = "w" + std::to_string(i);
    std::vector<std::string> a;
    if (hosts_) a = {"/usr/sbin/ip", "netns", "exec", hosts_->netns(i)};  // execs gossipd: same pid
    a.insert(a.end(), {gossipd_, "run", "--id", id, "--listen", endpoint(i), "--peers", peers,
                       "--algo", algo, "--model", o_.model, "--epochs", std::to_string(o_.epochs), "--batch",
                       std::to_string(o_.batch), "--lr", fmt("%g", o_.lr), "--seed", std::to_string(o_.seed),
                       "--threads", std::to_string(o_.threads), "--segments", o_.segments, "--quiet", "--http",
                       http_host(i) + ":0", "--cluster-id", "compare-" + algo, "--consensus-every", std::to_string(steps_),
                       "--metrics-out", dir + "/" + id + ".jsonl", "--params-out", dir + "/" + id + ".params"});
    if (o_.train_limit > 0) a.insert(a.end(), {"--train-limit", std::to_string(o_.train_limit)});
    if (o_.test_limit > 0) a.insert(a.end(), {"--test-limit", std::to_string(o_.test_limit)});
    if (!o_.data.empty()) a.insert(a.end(), {"--data", o_.data});
    if (o_.delay_ms > 0) a.insert(a.end(), {"--delay-ms", std::to_string(o_.delay_ms)});
    if (algo == "crossover" && o_.groups > 1) {
      a.insert(a.end(), {"--hierarchical", "--group", "g" + std::to_string(i % o_.groups)});
    }
    return a;
  }

  proto::CompareResult run_one(const std::string& algo) {
    proto::CompareResult res;
    res.set_algo(algo);
    res.set_workers(static_cast<uint32_t>(o_.workers));
    res.set_epochs(static_cast<uint32_t>(o_.epochs));
    res.set_target_accuracy(o_.target);
    const std::string dir = o_.out + "/" + algo;
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(dir)) fs::remove(e.path());  // a rerun of this protocol only
    if (!hosts_) ports_ = free_ports(o_.workers);
    std::vector<Worker> workers(static_cast<size_t>(o_.workers));
    for (int i = 0; i < o_.workers; ++i) {
      Worker& w = workers[static_cast<size_t>(i)];
      w.id = "w" + std::to_string(i);
      w.host = http_host(i);
      w.out = dir + "/" + w.id + ".log";
      w.err = dir + "/" + w.id + ".err";
      w.metrics = dir + "/" + w.id + ".jsonl";
      w.params = dir + "/" + w.id + ".params";
      w.proc = std::make_unique<ChildProcess>(worker_argv(algo, i, dir), w.out, w.err);
    }
    const auto start = Clock::now();
    const uint64_t total = steps_ * static_cast<uint64_t>(o_.epochs);
    double best = 0;
    static const std::regex port_re("http on port ([0-9]+)");
    for (;;) {
      bool all_done = true;
      uint64_t round = total;
      uint32_t epoch = static_cast<uint32_t>(o_.epochs);
      bool failed = false;
      for (auto& w : workers) {
        if (w.proc->wait(std::chrono::milliseconds(0))) {
          failed = failed || w.proc->exit_code() != 0;
          continue;
        }
        all_done = false;
        if (w.http_port == 0) {
          std::smatch m;
          const std::string log = read_file(w.out);
          if (std::regex_search(log, m, port_re)) w.http_port = static_cast<uint16_t>(std::stoi(m[1]));
          round = 0;
          epoch = 0;
          continue;
        }
        const std::string s = http_get(w.host, w.http_port, "/status");
        round = std::min(round, json_uint(s, "round"));
        epoch = std::min(epoch, static_cast<uint32_t>(json_uint(s, "epoch")));
      }
      best = std::max(best, mean_accuracy_so_far(workers));
      if (all_done) break;
      if (failed) {  // the others would only wait for it until their timeouts
        for (auto& w : workers) w.proc->signal(SIGKILL);
        for (auto& w : workers) w.proc->wait(std::chrono::seconds(5));
        break;
      }
      progress_.show(algo, round, total, epoch, o_.epochs, best, seconds_since(start));
      if (stop_.stop_requested()) {
        for (auto& w : workers) w.proc->signal(SIGTERM);
        for (auto& w : workers) {
          if (!w.proc->wait(std::chrono::seconds(5))) w.proc->signal(SIGKILL);
        }
        progress_.end();
        res.set_status("stopped by signal");
        return res;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    progress_.show(algo, total, total, static_cast<uint32_t>(o_.epochs), o_.epochs, best, seconds_since(start));
    progress_.end();
    // Name the worker that failed by itself before those compare then killed.
    std::stable_partition(workers.begin(), workers.end(), [](const Worker& w) { return w.proc->term_signal() == 0; });
    for (auto& w : workers) {
      if (w.proc->exit_code() != 0) {
        res.set_status(w.id + " exited with " +
                       (w.proc->term_signal() ? "signal " + std::to_string(w.proc->term_signal())
                                              : "code " + std::to_string(w.proc->exit_code())) +
                       ": " + last_line(read_file(w.err)) + " (see " + w.err + ")");
        std::printf("%-10s FAILED: %s\n", algo.c_str(), res.status().c_str());
        return res;
      }
    }
    res.set_status("ok");
    summarize(workers, dir, res);
    std::printf("%-10s final mean acc %.4f  averaged model %.4f  to %.2f: %s  %.1f rounds/s\n", algo.c_str(),
                res.final_mean_accuracy(), res.averaged_model_accuracy(), o_.target,
                res.seconds_to_target() < 0 ? "not reached" : fmt("%.1f s", res.seconds_to_target()).c_str(),
                res.rounds_per_second());
    std::fflush(stdout);
    return res;
  }

  double mean_accuracy_so_far(const std::vector<Worker>& workers) const {
    std::map<uint32_t, std::pair<double, int>> by_epoch;
    for (const auto& w : workers) {
      for (const auto& r : read_records(w.metrics)) {
        by_epoch[r.epoch()].first += r.test_accuracy();
        by_epoch[r.epoch()].second += 1;
      }
    }
    double best = 0;
    for (const auto& [e, v] : by_epoch) {
      if (v.second == static_cast<int>(workers.size())) best = std::max(best, v.first / v.second);
    }
    return best;
  }

  void summarize(const std::vector<Worker>& workers, const std::string& dir, proto::CompareResult& res) {
    std::vector<std::vector<proto::EpochRecord>> recs;
    for (const auto& w : workers) recs.push_back(read_records(w.metrics));
    // Epochs every worker recorded, by number (collect may miss some).
    std::map<uint32_t, std::vector<const proto::EpochRecord*>> by_epoch;
    for (const auto& r : recs) {
      for (const auto& rec : r) by_epoch[rec.epoch()].push_back(&rec);
    }
    std::erase_if(by_epoch, [&](const auto& kv) { return kv.second.size() != recs.size(); });
    std::ofstream curve(dir + "/curve.dat");
    curve << "# epoch wall_seconds mean_test_accuracy consensus_distance bytes_per_worker_per_round round_ms\n";
    double prev_wall = 0, prev_bytes = 0;
    uint64_t prev_round = 0;
    res.set_seconds_to_target(-1);
    res.set_epochs_to_target(-1);
    for (const auto& [epoch, at] : by_epoch) {
      double acc = 0, wall = 0, consensus = 0, bytes = 0;
      uint64_t round = 0;
      for (const proto::EpochRecord* r : at) {
        acc += r->test_accuracy() / static_cast<double>(at.size());
        wall = std::max(wall, r->wall_seconds());
        consensus += r->consensus_distance() / static_cast<double>(at.size());
        bytes += static_cast<double>(r->bytes_sent()) / static_cast<double>(at.size());
        round = std::max(round, r->round());
      }
      const double d_rounds = static_cast<double>(round - prev_round);
      const double per_round = d_rounds > 0 ? (bytes - prev_bytes) / d_rounds : 0;
      const double round_ms = d_rounds > 0 ? 1000.0 * (wall - prev_wall) / d_rounds : 0;
      curve << epoch << ' ' << wall << ' ' << acc << ' ' << consensus << ' ' << per_round << ' '
            << round_ms << '\n';
      prev_wall = wall;
      prev_bytes = bytes;
      prev_round = round;
      res.set_best_mean_accuracy(std::max(res.best_mean_accuracy(), acc));
      res.set_final_mean_accuracy(acc);
      res.set_final_consensus_distance(consensus);
      res.set_wall_seconds(wall);
      res.set_rounds(round);
      if (res.seconds_to_target() < 0 && acc >= o_.target) {
        res.set_seconds_to_target(wall);
        res.set_epochs_to_target(epoch);
      }
    }
    double rate = 0, bytes = 0;
    uint64_t skipped = 0;
    for (const auto& r : recs) {
      if (r.empty()) continue;
      rate += r.back().rounds_per_second() / static_cast<double>(recs.size());
      bytes += static_cast<double>(r.back().bytes_sent()) / static_cast<double>(recs.size());
      skipped += r.back().segments_skipped();
    }
    res.set_rounds_per_second(rate);
    res.set_bytes_per_worker_per_round(res.rounds() > 0 ? bytes / static_cast<double>(res.rounds()) : 0);
    res.set_segments_skipped(skipped);
    res.set_averaged_model_accuracy(averaged_accuracy(workers));
  }

  // The mean of the final replicas, evaluated on the test set.
  double averaged_accuracy(const std::vector<Worker>& workers) {
    for (const auto& w : workers) {
      if (w.params.empty()) return -1;  // collect: the replicas live elsewhere
    }
    if (test_.size() == 0) {
      test_ = trainer::load_fashion_mnist(data_dir(flags_), trainer::Split::kTest);
      if (o_.test_limit > 0) test_ = test_.head(o_.test_limit);
    }
    trainer::Trainer t(trainer::make_model(model_options(flags_), flags_.seed), test_, trainer_options(flags_));
    auto params = t.model().params();
    std::vector<double> sum(params.size(), 0.0);
    for (const auto& w : workers) {
      std::ifstream in(w.params, std::ios::binary);
      std::vector<float> p(params.size());
      in.read(reinterpret_cast<char*>(p.data()), static_cast<std::streamsize>(p.size() * sizeof(float)));
      if (!in) return -1;
      for (size_t i = 0; i < p.size(); ++i) sum[i] += p[i];
    }
    for (size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(sum[i] / workers.size());
    return t.evaluate(test_).accuracy;
  }

  void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
  }

  std::vector<std::string> ok_algos() const {
    std::vector<std::string> out;
    for (const auto& r : summary_.results()) {
      if (r.status() == "ok") out.push_back(r.algo());
    }
    return out;
  }

  struct Plot {
    std::string file, title, xlabel, ylabel;
    int x, y;       // curve.dat columns
    bool logscale;
  };
  static const std::vector<Plot>& plots() {
    static const std::vector<Plot> p{
        {"accuracy_vs_time.svg", "Mean test accuracy vs wall time", "seconds", "test accuracy", 2, 3, false},
        {"accuracy_vs_epoch.svg", "Mean test accuracy vs epochs", "epoch", "test accuracy", 1, 3, false},
        {"consensus.svg", "Consensus distance (gossip)", "epoch", "mean squared distance from the mean", 1, 4, true},
        {"bytes_per_round.svg", "Gossip bytes sent per worker per round", "epoch", "bytes", 1, 5, false},
        {"round_time.svg", "Round time", "epoch", "ms per round", 1, 6, false},
    };
    return p;
  }

  void plot() {
    const auto finished = ok_algos();
    std::ostringstream gp;
    gp << "set terminal svg size 720,420 dynamic enhanced font 'sans,12'\nset grid\nset key bottom right\n";
    for (const auto& p : plots()) {
      gp << "set output '" << o_.out << "/" << p.file << "'\nset title '" << p.title << "'\nset xlabel '" << p.xlabel
         << "'\nset ylabel '" << p.ylabel << "'\n"
         << (p.logscale ? "set logscale y\n" : "unset logscale y\n");
      // AllReduce has no consensus distance (its replicas are identical).
      std::vector<std::string> algos;
      for (const auto& a : finished) {
        if (!(p.logscale && a == "allreduce")) algos.push_back(a);
      }
      if (algos.empty()) {
        gp << "unset logscale y\nset label 1 'no data: no protocol that measures this finished' at graph 0.5,0.5 "
              "center\nplot [0:1] [0:1] 2 notitle\nunset label 1\n";
        continue;
      }
      gp << "plot ";
      for (size_t i = 0; i < algos.size(); ++i) {
        gp << (i ? ", " : "") << "'" << o_.out << "/" << algos[i] << "/curve.dat' using " << p.x << ":"
           << (p.logscale ? "($" + std::to_string(p.y) + " > 0 ? $" + std::to_string(p.y) + " : NaN)"
                          : std::to_string(p.y))
           << " with linespoints title '" << algos[i] << "'";
      }
      gp << "\n";
    }
    const std::string script = o_.out + "/plots.gp";
    write_text(script, gp.str());
    const std::string cmd = "gnuplot '" + script + "' 2> '" + o_.out + "/gnuplot.err'";
    if (std::system(cmd.c_str()) != 0) {
      throw std::runtime_error("gnuplot failed on " + script + ": " + last_line(read_file(o_.out + "/gnuplot.err")));
    }
  }

  std::string table() const {
    std::ostringstream t;
    t << "| protocol | status | final mean acc | best mean acc | averaged model acc | time to " << o_.target
      << " | epochs to " << o_.target << " | rounds/s | bytes/worker/round | segments skipped | consensus distance | "
         "wall s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& r : summary_.results()) {
      if (r.status() != "ok") {
        t << "| " << r.algo() << " | " << r.status() << " | | | | | | | | | | |\n";
        continue;
      }
      t << "| " << r.algo() << " | ok | " << fmt("%.4f", r.final_mean_accuracy()) << " | "
        << fmt("%.4f", r.best_mean_accuracy()) << " | " << (r.averaged_model_accuracy() < 0 ? "n/a" : fmt("%.4f", r.averaged_model_accuracy())) << " | "
        << (r.seconds_to_target() < 0 ? "not reached" : fmt("%.1f s", r.seconds_to_target())) << " | "
        << (r.epochs_to_target() < 0 ? "—" : fmt("%.0f", r.epochs_to_target())) << " | "
        << fmt("%.1f", r.rounds_per_second()) << " | "
        << (r.algo() == "allreduce" ? "—" : fmt("%.0f", r.bytes_per_worker_per_round())) << " | "
        << r.segments_skipped() << " | "
        << (r.algo() == "allreduce" ? "0 (exact)" : fmt("%.3g", r.final_consensus_distance())) << " | "
        << fmt("%.1f", r.wall_seconds()) << " |\n";
    }
    return t.str();
  }

  std::string setup() const {
    std::ostringstream s;
    if (collected_) {
      s << summary_.workers() << " running daemons, read through their /status (gossipctl collect); each epoch "
        << "line is the daemon's state when the collector saw its epoch advance.";
      return s.str();
    }
    s << o_.workers
      << (hosts_ ? " workers, each in its own network namespace on a bridge (tcp" +
                       (o_.bandwidth.empty() ? std::string(")") : ", " + o_.bandwidth + " per host)")
                 : std::string(" local workers (gossipd processes over TCP loopback)"))
      << (o_.delay_ms > 0 ? ", " + std::to_string(o_.delay_ms) + " ms injected latency per message" : std::string())
      << ", model " << o_.model << ", " << o_.epochs
      << " epochs of " << summary_.train_samples() << " Fashion-MNIST training samples shared among them, batch "
      << o_.batch << " per worker, learning rate " << o_.lr << " (cosine), seed " << o_.seed << ", segments "
      << o_.segments << (o_.groups > 1 ? ", crossover hierarchical in " + std::to_string(o_.groups) + " groups" : "")
      << "; test set " << summary_.test_samples() << " samples.";
    return s.str();
  }

  void write_report() {
    std::ostringstream md;
    md << "# gossipd compare\n\n" << setup() << "\n\n" << table()
       << "\nbytes/worker/round counts gossip payload and envelopes (AllReduce's ring traffic is not counted). "
          "Per-worker metrics: `<protocol>/w<i>.jsonl`; logs `<protocol>/w<i>.log`; data `summary.json`.\n\n";
    for (const auto& p : plots()) md << "## " << p.title << "\n\n![" << p.title << "](" << p.file << ")\n\n";
    write_text(o_.out + "/report.md", md.str());

    std::ostringstream html;
    html << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>gossipd compare</title><style>"
            "body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #bbb;padding:4px 8px;text-align:right}td:first-child{text-align:left}"
            "</style></head><body>\n<h1>gossipd compare</h1>\n<p>"
         << setup() << "</p>\n<table>\n";
    std::istringstream rows(table());
    int n = 0;
    for (std::string line; std::getline(rows, line); ++n) {
      if (n == 1) continue;  // the markdown rule
      const std::string cell = n == 0 ? "th" : "td";
      html << "<tr>";
      std::stringstream cells(line.substr(1));
      for (std::string c; std::getline(cells, c, '|');) {
        if (c.find_first_not_of(' ') == std::string::npos && cells.peek() == EOF) break;
        html << "<" << cell << ">" << c << "</" << cell << ">";
      }
      html << "</tr>\n";
    }
    html << "</table>\n";
    for (const auto& p : plots()) {
      std::string svg = read_file(o_.out + "/" + p.file);
      const auto start = svg.find("<svg");
      html << "<h2>" << p.title << "</h2>\n" << (start == std::string::npos ? "" : svg.substr(start)) << "\n";
    }
    html << "</body></html>\n";
    write_text(o_.out + "/report.html", html.str());
  }

  const CompareOptions& o_;
  std::stop_token stop_;
  std::string gossipd_;
  TrainFlags flags_;
  const NetnsHosts* hosts_;  // null: local processes on loopback
  std::vector<uint16_t> ports_;

 public:
  bool collected_ = false;  // the report describes collected daemons

 private:
  trainer::Dataset test_;
  size_t steps_ = 1;
  proto::CompareSummary summary_;
  Progress progress_;
};

}  // namespace

CLI::App* add_compare_command(CLI::App& app, CompareOptions& o) {
  CLI::App* cmd = app.add_subcommand("compare", "Train with each protocol in turn on local workers and report");
  cmd->add_option("--workers", o.workers, "gossipd processes per protocol")->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--algos", o.algos, "Protocols to run, in order")->delimiter(',')->check(CLI::IsMember(kAlgos))
      ->capture_default_str();
  cmd->add_option("--model", o.model, "Model")->check(CLI::IsMember(trainer::model_names()))->capture_default_str();
  cmd->add_option("--epochs", o.epochs, "Epochs of data per worker")->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--batch", o.batch, "Batch size per worker")->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("--lr", o.lr, "Learning rate (the same schedule for every protocol)")->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--segments", o.segments, "Gossip unit: fine, coarse or N")->capture_default_str();
  cmd->add_option("--groups", o.groups, "Crossover: hierarchical over this many groups (1: flat)")
      ->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed for model, data split and topology")->capture_default_str();
  cmd->add_option("--train-limit", o.train_limit, "Use only the first N training samples (0: all)")
      ->capture_default_str();
  cmd->add_option("--test-limit", o.test_limit, "Use only the first N test samples (0: all)")->capture_default_str();
  cmd->add_option("--data", o.data, "Fashion-MNIST directory (default: the Debian package's)");
  cmd->add_option("--target", o.target, "Accuracy whose time-to is reported")->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--threads", o.threads, "OpenBLAS threads per worker")->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--out", o.out, "Directory for metrics, summary.json, plots and the report")->required();
  cmd->add_option("--gossipd", o.gossipd, "The gossipd binary (default: next to gossipctl)");
  cmd->add_option("--preset", o.preset,
                  "large-batch: global batch x1, x4, x16 with the lr scaled; scaling: 4, 8, 16 workers at a fixed "
                  "global batch (--batch x 4)")
      ->check(CLI::IsMember({"large-batch", "scaling"}));
  cmd->add_option("--delay-ms", o.delay_ms, "Latency added to every message, in the workers' transport")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  cmd->add_flag("--netns", o.netns, "One network namespace per worker on a private bridge (root)");
  cmd->add_option("--bandwidth", o.bandwidth, "With --netns: cap every host's link, e.g. 100mbit (tc tbf)")
      ->check([](const std::string& v) {
        return std::regex_match(v, std::regex("[0-9]+(\\.[0-9]+)?([kmg]?(bit|bps))")) ? std::string()
                                                                                    : "use a tc rate like 100mbit";
      });
  return cmd;
}

namespace {

struct Config {
  std::string name;
  CompareOptions options;
  double x;  // the preset's axis: workers or global batch
};

std::vector<Config> preset_configs(const CompareOptions& o) {
  std::vector<Config> out;
  if (o.preset == "large-batch") {
    for (int k : {1, 4, 16}) {
      Config c{"batch-x" + std::to_string(k), o, 0};
      c.options.batch = o.batch * static_cast<size_t>(k);
      c.options.lr = o.lr * static_cast<float>(k);
      c.x = static_cast<double>(c.options.batch * static_cast<size_t>(o.workers));
      out.push_back(c);
    }
  } else if (o.preset == "scaling") {
    const size_t global = o.batch * 4;  // --batch is the per-worker batch at 4 workers
    for (int n : {4, 8, 16}) {
      Config c{"n" + std::to_string(n), o, static_cast<double>(n)};
      c.options.workers = n;
      c.options.batch = std::max<size_t>(1, global / static_cast<size_t>(n));
      c.options.groups = std::min(o.groups, n);
      out.push_back(c);
    }
  } else {
    out.push_back({"", o, static_cast<double>(o.workers)});
  }
  return out;
}

void check_out_dir(const std::string& out) {
  std::error_code ec;
  if (fs::exists(out + "/summary.json")) {
    throw UsageError(out + " already holds a comparison (summary.json): choose another --out or move it away");
  }
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) throw UsageError("cannot create --out " + out + ": " + ec.message());
}

// The preset's own summary, table and plot over its configurations.
void write_preset_report(const CompareOptions& o, const std::vector<Config>& configs, const proto::ComparePreset& p) {
  std::ofstream(o.out + "/summary.json") << to_json(p) << "\n";
  const bool scaling = o.preset == "scaling";
  std::ostringstream md;
  md << "# gossipd compare --preset " << o.preset << "\n\n"
     << (scaling ? "Workers 4, 8 and 16 at a fixed global batch of " + std::to_string(o.batch * 4) + "."
                 : "Global batch x1, x4 and x16 at " + std::to_string(o.workers) +
                       " workers, learning rate scaled alike (from " + fmt("%g", o.lr) + ").")
     << " Each configuration has its own report in its directory.\n\n"
     << "| configuration | workers | batch/worker | lr | protocol | status | round ms | time to " << o.target
     << " | epochs to " << o.target << " | final mean acc |\n|---|---|---|---|---|---|---|---|---|---|\n";
  std::ostringstream dat[4];
  std::map<std::string, std::ostringstream> per_algo;
  for (size_t i = 0; i < configs.size() && i < static_cast<size_t>(p.runs_size()); ++i) {
    const auto& c = configs[i];
    for (const auto& r : p.runs(static_cast<int>(i)).results()) {
      const double round_ms = r.rounds_per_second() > 0 ? 1000.0 / r.rounds_per_second() : 0;
      md << "| [" << c.name << "](" << c.name << "/report.md) | " << c.options.workers << " | " << c.options.batch
         << " | " << fmt("%g", c.options.lr) << " | " << r.algo() << " | " << r.status() << " | "
         << fmt("%.1f", round_ms) << " | "
         << (r.seconds_to_target() < 0 ? "not reached" : fmt("%.1f s", r.seconds_to_target())) << " | "
         << (r.epochs_to_target() < 0 ? "—" : fmt("%.0f", r.epochs_to_target())) << " | "
         << fmt("%.4f", r.final_mean_accuracy()) << " |\n";
      if (r.status() == "ok") per_algo[r.algo()] << c.x << " " << round_ms << "\n";
    }
  }
  std::ostringstream gp;
  gp << "set terminal svg size 720,420 dynamic enhanced font 'sans,12'\nset grid\nset key top left\nset output '"
     << o.out << "/round_time.svg'\nset title 'Round time'\nset xlabel '"
     << (scaling ? "workers" : "global batch") << "'\nset ylabel 'ms per round'\n"
     << (scaling ? "" : "set logscale x 2\n");
  if (per_algo.empty()) {
    gp << "plot [0:1] [0:1] 2 notitle\n";
  } else {
    gp << "plot ";
    bool first = true;
    for (auto& [algo, rows] : per_algo) {
      std::ofstream(o.out + "/" + algo + ".dat") << rows.str();
      gp << (first ? "" : ", ") << "'" << o.out << "/" << algo << ".dat' using 1:2 with linespoints title '" << algo
         << "'";
      first = false;
    }
    gp << "\n";
  }
  std::ofstream(o.out + "/plots.gp") << gp.str();
  if (std::system(("gnuplot '" + o.out + "/plots.gp' 2> '" + o.out + "/gnuplot.err'").c_str()) != 0) {
    throw std::runtime_error("gnuplot failed on " + o.out + "/plots.gp");
  }
  md << "\n![Round time](round_time.svg)\n";
  std::ofstream(o.out + "/report.md") << md.str();
}

}  // namespace

int run_collect(const CollectOptions& c) {
  std::stop_source stop;
  SignalWatcher signals(stop);
  if (!on_path("gnuplot")) throw UsageError("gnuplot not found: apt-get install gnuplot-nox");
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
      throw UsageError(c.hosts + ":" + std::to_string(n) + ": '" + line + "' is not HOST:PORT (a daemon's --http)");
    }
    std::string host = m[1];
    if (host.front() == '[') host = host.substr(1, host.size() - 2);
    hosts.emplace_back(host, static_cast<uint16_t>(std::stoi(m[2])));
  }
  if (hosts.empty()) throw UsageError("--hosts " + c.hosts + " lists no daemon (one HOST:PORT per line)");
  check_out_dir(c.out);
  CompareOptions o;
  o.out = c.out;
  o.target = c.target;
  o.workers = static_cast<int>(hosts.size());
  o.algos.clear();
  Comparison cmp(o, stop.get_token(), nullptr);
  cmp.collected_ = true;
  cmp.collect(hosts, std::chrono::milliseconds(c.poll_ms));
  cmp.write_outputs();
  std::printf("gossipctl collect: report in %s/report.md and %s/report.html\n", c.out.c_str(), c.out.c_str());
  return kExitOk;
}

CLI::App* add_collect_command(CLI::App& app, CollectOptions& c) {
  CLI::App* cmd = app.add_subcommand("collect", "The compare report from daemons already running elsewhere");
  cmd->add_option("--hosts", c.hosts, "File with one HOST:PORT (a daemon's --http) per line; # comments")
      ->required();
  cmd->add_option("--out", c.out, "Directory for the metrics, summary.json, plots and report")->required();
  cmd->add_option("--target", c.target, "Accuracy whose time-to is reported")->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--poll-ms", c.poll_ms, "How often each /status is read")->check(CLI::Range(50, 600000))
      ->capture_default_str();
  return cmd;
}

int run_compare(const CompareOptions& o) {
  std::stop_source stop;
  SignalWatcher signals(stop);
  if (o.groups > o.workers) throw UsageError("--groups " + std::to_string(o.groups) + " is more than --workers");
  if (!on_path("gnuplot")) {
    throw UsageError("gnuplot not found, which draws the report's plots: apt-get install gnuplot-nox "
                     "(or run deploy/install-deps.sh)");
  }
  const std::string gossipd = find_gossipd(o);
  if (access(gossipd.c_str(), X_OK) != 0) {
    throw UsageError("cannot run " + gossipd + ": build it, or name it with --gossipd");
  }
  if (o.netns && geteuid() != 0) throw UsageError("--netns creates network namespaces: run as root");
  if (!o.netns && !o.bandwidth.empty()) {
    throw UsageError("--bandwidth caps the links between namespaces: use it with --netns");
  }
  check_out_dir(o.out);
  const std::vector<Config> configs = preset_configs(o);
  proto::ComparePreset preset;
  preset.set_preset(o.preset);
  for (const auto& cfg : configs) {
    if (stop.stop_requested()) break;
    CompareOptions co = cfg.options;
    if (!cfg.name.empty()) {
      co.out = o.out + "/" + cfg.name;
      check_out_dir(co.out);
    }
    std::unique_ptr<NetnsHosts> hosts;
    if (co.netns) hosts = std::make_unique<NetnsHosts>(co.workers, co.bandwidth);
    Comparison c(co, stop.get_token(), hosts.get());
    std::printf("gossipctl compare%s%s: %zu protocols x %d workers, batch %zu, %d epochs; output in %s\n",
                cfg.name.empty() ? "" : " ", cfg.name.c_str(), co.algos.size(), co.workers, co.batch, co.epochs,
                co.out.c_str());
    std::fflush(stdout);
    c.run_all();
    c.write_outputs();
    c.summary().set_config(cfg.name);
    *preset.add_runs() = c.summary();
  }
  if (!o.preset.empty()) write_preset_report(o, configs, preset);
  std::printf("gossipctl compare: report in %s/report.md%s\n", o.out.c_str(),
              o.preset.empty() ? (" and " + o.out + "/report.html (summary.json, plots *.svg)").c_str()
                               : " (one report per configuration below it)");
  return stop.stop_requested() ? kExitFailure : kExitOk;
}

}  // namespace gossipd::daemon
