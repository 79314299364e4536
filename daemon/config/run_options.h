#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "daemon/config/train_flags.h"
#include "protocol/transport/data_socket.h"
#include "protocol/transport/transport.h"

namespace gossipd::daemon {

// What `gossipd run` was asked to do, whatever the mode (a mode's own flags
// are the mode's: daemon/worker/mode.h); gossipctl reads the defaults and
// limits it shares with gossipd run from here.
// The one default mode, wherever a mode is not named: gossipd run without
// --algo, and the Python module's Worker without `algo` (the binding's
// default_mode()). AllReduce-SGD: every replica the same, as torch DDP
// trains; the gossip modes are asked for by name.
inline constexpr const char* kDefaultMode = "allreduce";

struct RunOptions {
  TrainFlags train;
  // The mode (daemon/worker/mode_set.h: the modes there are); its own flags live in the mode.
  std::string algo = kDefaultMode;
  std::string segments = "fine";   // fine | coarse | N
  int segment_deadline_ms = 2000;  // an asynchronous exchange's segment later than this is skipped
  int evals_per_epoch = 1;         // test-set evaluations per epoch (the last at its end)
  int heartbeat_ms = 200;
  int failure_timeout_ms = 3000;
  std::string id;
  std::string listen = "tcp://127.0.0.1:0";
  std::vector<std::string> peers;  // ID=ENDPOINT; the own id may be listed (ignored)
  std::vector<std::string> join;   // endpoints of live members to join through
  bool bootstrap = false;          // with --join: start as the first member if nobody answers
  size_t join_donors = 4;          // with --join: members the state is downloaded from at once
  // Times a member cut off from its cluster (evicted while it did not run,
  // or its part of a partition yielded) enters it again by itself, its state
  // downloaded anew (--rejoin; 0: it ends with one line instead).
  int rejoin = 3;
  int rejoined = 0;       // times this process has (gossipd run's count, in /status)
  std::string advertise;  // the endpoint others reach this worker at (default: Member::advertised_endpoint)
  std::string
      group;  // hierarchical group label (default: the host of the advertised endpoint; "auto": measured)
  int group_near_ms = 20;  // --group auto: peers within this round trip share a group
  std::string http;        // IP:PORT for /status and /metrics; empty = off
  std::string cluster_id = "gossipd";
  int timeout_ms = 10000;
  int startup_timeout_ms = 60000;
  size_t max_message_bytes = size_t{256} << 20;
  size_t max_members = 1024;                  // members in a view, joiners included
  size_t max_queued_bytes = size_t{1} << 30;  // inbound bytes waiting per sender
  // Kernel send buffer per peer connection, KiB (--send-buffer-kb), and its limits.
  static constexpr int kMinSendBufferKb = 4;
  static constexpr int kMaxSendBufferKb = 4096;
  int send_buffer_kb = kMaxSendBufferKb;
  int max_connections = protocol::kDefaultMaxConnections;  // outbound control connections open at once
  // Collective payloads: "tcp" = the direct data path, "zmq" = over ZeroMQ
  // (--data-path). CURVE turns the direct path off.
  std::string data_path = "tcp";
  // TCP congestion control of the direct connections (--data-congestion);
  // "system" keeps the kernel's default.
  std::string data_congestion = protocol::kDefaultCongestion;
  // Each way's pipe between members on one host (--shm-kb; 0: their
  // direct connections keep the socket).
  static constexpr size_t kDefaultShmKb = 4096;
  size_t shm_kb = kDefaultShmKb;
  std::string curve_secret_key;
  std::string curve_cluster_key;
  std::string metrics_out;
  std::string params_out;   // raw float32 parameters at the end
  std::string control_out;  // JSON lines: listening, then done | stopped | failed (proto ControlRecord)
  bool quiet = false;
  bool check_config = false;  // validate everything, start nothing
  int delay_ms = 0;           // injected latency on every outbound message
  std::string wan;            // a WAN topology file (wan_topology.h): each peer's link's delay, jitter, loss
  int step_delay_ms = 0;      // injected slowness: every training step takes this much longer
  double step_slowdown = 1;   // injected slowness: compute this many times slower
  int emulate_step_ms = 0;    // an emulated machine: each step's compute padded to this many ms
  double inject_drop = 0;     // injected loss, duplication, reordering (probabilities)
  double inject_duplicate = 0;
  double inject_reorder = 0;
  uint64_t inject_seed = 0;         // 0: derived from --seed and --id
  int linger_ms = 0;                // keep serving /status this long after training
  std::string checkpoint_dir;       // empty = no checkpoints
  std::string cache_dir;            // what gossipd measured here and keeps (default_cache_dir())
  uint64_t checkpoint_every = 200;  // rounds
  int checkpoint_keep = 3;
};

// The checks that need no data, model or socket; throws UsageError.
void check_run_options(const RunOptions& options);

// "a=tcp://h:1,b=ipc:///x" entries -> id -> endpoint; throws UsageError.
std::map<std::string, std::string> parse_peers(const std::vector<std::string>& entries);

// tcp://0.0.0.0:PORT or tcp://*:PORT: an endpoint others cannot reach.
bool binds_everything(const std::string& endpoint);

// The default --group label: the host of a tcp:// endpoint ("local" for ipc://).
std::string default_group(const std::string& endpoint);
// --group auto: the label comes from measured round trips (auto_group.h).
inline constexpr const char* kAutoGroup = "auto";

// How long membership may take to evict a member that died without a word:
// the failure timeout its suspicion runs, plus the probes that find it
// (SWIM: a probe of it within a pass, two periods for its ACK, the word
// spread in a few more): 10 protocol periods. What waits for an eviction
// waits this long.
inline int eviction_bound_ms(const RunOptions& o) { return o.failure_timeout_ms + 10 * o.heartbeat_ms; }

}  // namespace gossipd::daemon
