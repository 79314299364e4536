#pragma once

#include "daemon/config/cli.h"  // CLI::App, declared
#include "daemon/config/per_worker.h"
#include "daemon/ctl/compare.h"

// gossipctl simulate's entry points, declared here (gossipctl's main
// registers it with the others) and defined by daemon/sim/, the room above
// that runs gossipd run's members: as the tools registry defines what
// mode_tools.h declares, so that no include runs up.
namespace gossipd::daemon {

// Virtual workers gossipctl simulate runs at most with training: every one
// is a whole member (its replica, its dataset, its threads) in this process.
constexpr int kMaxSimulatedWorkers = 256;
// ... and with --no-train (rounds and bytes from the time model alone).
constexpr int kMaxTimeOnlyWorkers = 10000;

// gossipctl simulate's flags: compare's (--bandwidth is the modelled links'
// then), and the time model's (daemon/sim/time_model.h).
struct SimulateOptions {
  // compare.wan (--topology FILE, --preset wan): the WAN the model's hosts
  // are on, read by resolve_simulate_flags (the members in this process are
  // not given --wan: compare gives it to --netns hosts alone).
  CompareOptions compare;
  double step_ms = 0;                     // a training step's compute; 0: from the layer profile
  double latency_ms = 0.05;               // every link's, per message
  double burst_kb = 0;                    // every link direction's token bucket (tc tbf's burst), KiB
  PerWorker<double> stragglers;           // "w3=2.5,w7=4": compute multipliers
  PerWorker<double> slow_links;           // "w2=10mbit": those hosts' links, bytes/s
  int workers_per_host = 1;               // worker i on host i mod ceil(N / K)
  std::string host_bandwidth = "24gbit";  // between two workers on one host
  // The bandwidths in bytes/s, typed by resolve_simulate_flags (modelled_hosts.h):
  // every link's (compare's --bandwidth, else kDefaultSimulatedBandwidth) and
  // --host-bandwidth.
  double link_bytes_per_s = 0;
  double host_bytes_per_s = 0;
  double drop_rate = 0;   // of gossip messages
  bool no_train = false;  // time only: no replicas
  uint64_t rounds = 100;  // with --no-train
};
constexpr const char* kDefaultSimulatedBandwidth = "10gbit";

// Registers `gossipctl simulate`: compare's flags, filling `options`; returns it.
CLI::App* add_simulate_command(CLI::App& app, SimulateOptions& options);

// Runs each protocol of `options` as compare does, but with its workers as
// members of gossipd run in this process over an in-process hub
// (virtual_cluster.h): the same flags, protocols and arithmetic, so the
// parameters end the same as compare's loopback run that skipped no
// segment. Writes the same files as compare (summary.json with "simulated":
// true, the plots, report.md, report.html), its times from the time model.
// With --no-train, only the time model's rounds. Returns the exit code.
int run_simulate(const SimulateOptions& options);

}  // namespace gossipd::daemon
