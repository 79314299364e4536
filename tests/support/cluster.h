#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proto/gossip.pb.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {

// N `gossipd run` workers w0..w{N-1} with a static member list over ipc://
// sockets in a TempDir of its own (or tcp://127.0.0.1 ports, where the
// direct data path runs), each serving HTTP on 127.0.0.1 (any port). Every
// process is killed by pid when the Cluster goes, also on failure.
class Cluster {
 public:
  enum class Listen { kIpc, kTcp };
  // `extra` goes to every worker, `per_member(i)` to worker i only. kTcp:
  // loopback ports below the ephemeral range found free a moment before
  // (daemon::free_ports; a process binding that very port first makes
  // that worker fail to bind, and say so).
  Cluster(int n, const std::vector<std::string>& extra,
          const std::function<std::vector<std::string>(int)>& per_member = nullptr,
          Listen listen = Listen::kIpc);
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // "w<i>". snprintf, not operator+: GCC 12 raises a -Wrestrict false
  // positive (PR 105329) where the concatenation is inlined.
  static std::string id(int i) {
    char s[16];
    std::snprintf(s, sizeof(s), "w%d", i);
    return s;
  }
  // The endpoint worker `id` listens on (ipc:// for joiners).
  std::string endpoint(const std::string& id) const;
  // Starts one more worker, `id`, that joins through worker `via` with
  // `extra` flags; returns its index (for proc() and http_port()).
  int join(const std::string& id, int via, const std::vector<std::string>& extra);
  // Starts worker i again with the command line it was started with (the old
  // process must have exited); returns the new index.
  int restart(int i);
  Process& proc(int i) { return *procs_.at(static_cast<size_t>(i)); }
  int size() const { return static_cast<int>(procs_.size()); }

  // The HTTP port worker i's control record names once it listens (0 if
  // none within 30 s, or it exited first).
  uint16_t http_port(int i);
  // Where process i writes its control records (gossipd run --control-out).
  const std::string& control_file(int i) const { return controls_.at(static_cast<size_t>(i)); }
  // Process i's record of its end (done, stopped or failed); nullopt before.
  std::optional<proto::ControlRecord> end_record(int i) const;

 private:
  int launch(const std::vector<std::string>& argv, const std::string& id);

  TempDir dir_{"gossipd_cluster"};  // declared first: goes after the processes
  std::vector<std::unique_ptr<Process>> procs_;
  std::vector<std::vector<std::string>> argv_;  // per process, without --control-out
  std::vector<std::string> controls_;           // per process: its --control-out file
  std::map<std::string, std::string> tcp_;      // id -> tcp:// endpoint (Listen::kTcp)
};

// --evict-byzantine's outcome in a cluster whose processes have all
// exited: "" when worker `bad` ended with an error, its join again refused
// because it was evicted, and every other ended done, logged the eviction
// and ended in a view without it; otherwise what is not so, with the log.
std::string why_not_evicted(Cluster& c, int bad);

// --robust's naming for worker `i`, an honest member that has exited: ""
// when it ended done, its /status record and its log name worker `bad`
// Byzantine and no one else, and its test accuracy is at least
// `min_accuracy`; otherwise what is not so.
std::string why_not_named_alone(Cluster& c, int i, int bad, double min_accuracy);

// The HTTP port a `gossipd run --http 127.0.0.1:0 --control-out FILE`
// process names in FILE once it listens (0 if not within 30 s, or it exited
// first).
uint16_t http_port(Process& p, const std::string& control_file);

}  // namespace gossipd::testing
