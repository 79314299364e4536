#include "daemon/bench/membership_bench.h"

#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "daemon/bench/bench_workers.h"
#include "daemon/bench/inproc_cluster.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Traffic {
  double messages = 0, bytes = 0;
};

// Per live member per second over `window_s`, the mean.
Traffic traffic(const InProcCluster& c, double window_s) {
  std::vector<protocol::InProcHub::Sent> before;
  for (size_t i = 0; i < c.size(); ++i) before.push_back(c.sent(i));
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(window_s));
  const double s = seconds_since(start);
  Traffic t;
  size_t live = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c.alive(i)) continue;
    ++live;
    t.messages += static_cast<double>(c.sent(i).messages - before[i].messages) / s;
    t.bytes += static_cast<double>(c.sent(i).bytes - before[i].bytes) / s;
  }
  t.messages /= static_cast<double>(std::max<size_t>(live, 1));
  t.bytes /= static_cast<double>(std::max<size_t>(live, 1));
  return t;
}

// Seconds until no live member lists `id` (negative: not within `limit_s`).
double until_dropped(InProcCluster& c, const std::string& id, double limit_s) {
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit_s));
  return c.wait_dropped(id, deadline) ? seconds_since(start) : -1.0;
}

}  // namespace

CLI::App* add_membership_bench_command(CLI::App& bench, MembershipBenchOptions& o) {
  CLI::App* cmd = bench.add_subcommand(
      "membership",
      "N members of the real membership code in this process: traffic, detection, false evictions");
  cmd->add_option("--members", o.members, "Members")
      ->check(CLI::Range(size_t{3}, size_t{4096}))
      ->capture_default_str();
  cmd->add_option("--kills", o.kills, "Members killed, one at a time")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option("--window-s", o.window_s, "Quiet seconds the traffic is measured over")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("--heartbeat-ms", o.heartbeat_ms, "The protocol period (gossipd run --heartbeat-ms)")
      ->check(CLI::Range(10, 600000))
      ->capture_default_str();
  cmd->add_option("--failure-timeout-ms", o.failure_timeout_ms, "gossipd run --failure-timeout-ms")
      ->check(CLI::Range(50, 3600000))
      ->capture_default_str();
  cmd->add_option("--limit-s", o.limit_s, "A kill not seen by every survivor by then is not detected")
      ->check(CLI::Range(1.0, 36000.0))
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Which members are killed")->capture_default_str();
  cmd->add_option("--local-health-max", o.max_local_health,
                  "Lifeguard's local health score at most: the period stretches by (1 + score) (0: off)")
      ->check(CLI::Range(size_t{0}, size_t{64}))
      ->capture_default_str();
  return cmd;
}

int run_membership_bench(const MembershipBenchOptions& o) {
  spdlog::set_level(spdlog::level::err);  // a thousand members' view changes are not news
  MembershipOptions mo;
  mo.heartbeat_interval = std::chrono::milliseconds(o.heartbeat_ms);
  mo.failure_timeout = std::chrono::milliseconds(o.failure_timeout_ms);
  mo.max_local_health = o.max_local_health;
  const auto start = Clock::now();
  InProcCluster c(o.members, mo);
  c.arm_all();
  const double start_s = seconds_since(start);
  const Traffic quiet = traffic(c, o.window_s);
  std::mt19937_64 rng(o.seed);
  std::vector<size_t> order(o.members);
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<double> detect;
  int missed = 0;
  for (int k = 0; k < o.kills && static_cast<size_t>(k) + 2 < o.members; ++k) {
    c.kill(order[static_cast<size_t>(k)]);
    const double s = until_dropped(c, InProcCluster::id(order[static_cast<size_t>(k)]), o.limit_s);
    if (s < 0)
      ++missed;
    else
      detect.push_back(s);
  }
  // Every survivor evicted each dead member once (itself, or on a peer's
  // word); more is a live member evicted.
  double false_evictions = 0, suspicions = 0;
  size_t cut_off = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (!c.alive(i)) continue;
    false_evictions += std::max(0.0, c.counter(i, "gossipd_members_evicted_total") - o.kills);
    suspicions += c.counter(i, "gossipd_members_suspected_total");
    if (!c.lost(i).empty()) ++cut_off;
  }
  std::printf(
      "{\"bench\":\"membership\",\"members\":%zu,\"heartbeat_ms\":%d,\"failure_timeout_ms\":%d,"
      "\"local_health_max\":%zu,\"start_s\":%.2f,\"messages_per_member_per_s\":%.1f,"
      "\"bytes_per_member_per_s\":%.0f,\"kills\":%zu,\"detect_median_s\":%.2f,\"detect_worst_s\":%.2f,"
      "\"missed\":%d,\"false_evictions\":%.0f,\"suspicions\":%.0f,\"cut_off\":%zu}\n",
      o.members, o.heartbeat_ms, o.failure_timeout_ms, o.max_local_health, start_s, quiet.messages,
      quiet.bytes, detect.size(), detect.empty() ? -1.0 : median_of(detect),
      detect.empty() ? -1.0 : *std::max_element(detect.begin(), detect.end()), missed, false_evictions,
      suspicions, cut_off);
  std::fflush(stdout);
  return missed == 0 && false_evictions == 0 ? 0 : 1;
}

}  // namespace gossipd::daemon
