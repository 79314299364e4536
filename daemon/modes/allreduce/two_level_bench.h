#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "daemon/ctl/mode_tools.h"

namespace gossipd::daemon {

// gossipctl bench two-level: AllReduce-SGD's collective where hosts hold
// several members, the two levels (protocol::TwoLevelCollectives: inside each
// host, then across) against one flat ring over every member (the
// schedule protocol::Allreduce picks), both timed alternately in the same
// processes. HOSTS network namespaces on a private bridge (root), each
// holding PER_HOST processes (over shared memory inside a host, TCP across),
// every host's link capped at BANDWIDTH (tc tbf; "" for none).
struct TwoLevelBenchOptions {
  int hosts = 4;
  int per_host = 2;
  std::string bandwidth = "100mbit";
  // block: ranks r .. r+PER_HOST-1 on one host, so a flat ring crosses each
  // host's link once each way (its best order); round-robin: rank r on host
  // r mod HOSTS, so every hop of a flat ring crosses hosts (ranks in
  // member-id order fall anywhere between).
  std::string placement = "block";
  // allreduce, or sharded: a reduce-scatter then an allgather (the sharded
  // update's halves, as the pipeline's replicas and compute groups run them).
  std::string op = "allreduce";
  size_t bytes = size_t{8} << 20;
  int reps = 10;
  int warmup = 1;
  int timeout_ms = 120000;
  std::string bind_to = "core";
  // Hidden worker mode.
  int worker_rank = -1;
  std::string worker_netns;
  std::string worker_host;
};

// The allreduce mode's gossipctl commands (the tools registry,
// daemon/modes/tools.cc): `bench two-level`.
std::unique_ptr<ModeTools> make_allreduce_tools();

}  // namespace gossipd::daemon
