#include "daemon/cmd/run_flags.h"

#include <CLI/CLI.hpp>

#include "daemon/config/cli.h"
#include "daemon/config/wan_topology.h"
#include "daemon/worker/mode_set.h"

// The flags of `gossipd run`.
namespace gossipd::daemon {

void add_run_command(CLI::App& app, RunCommandLine& line) {
  RunOptions& o = line.options;
  CLI::App* cmd = app.add_subcommand("run", "Run a worker that trains with its peers");
  line.command = cmd;
  add_train_flags(*cmd, o.train);
  std::string modes_help = "The mode:";
  for (const auto& m : line.modes.all()) modes_help += "\n  " + m->name() + ": " + m->summary();
  cmd->add_option("--algo", o.algo, modes_help)
      ->check(CLI::IsMember(line.modes.names()))
      ->capture_default_str();
  cmd->add_option("--segments", o.segments,
                  "Gossip unit: fine (one per layer block), coarse (whole model) or N pieces")
      ->capture_default_str();
  cmd->add_option("--heartbeat-ms", o.heartbeat_ms,
                  "Membership's protocol period: one probe of one member per period (SWIM)")
      ->check(CLI::Range(10, 600000))
      ->capture_default_str();
  cmd->add_option("--failure-timeout-ms", o.failure_timeout_ms,
                  "A member suspected this long without refuting is evicted; a member that hears from no "
                  "peer this long ends")
      ->check(CLI::Range(50, 3600000))
      ->capture_default_str();
  cmd->add_option(
         "--evals-per-epoch", o.evals_per_epoch,
         "Evaluate on the test set this many times per epoch, evenly spaced, the last at its end (finer "
         "time to a target accuracy; each is one pass over the test set, in the background on idle CPU)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--segment-deadline-ms", o.segment_deadline_ms,
                  "A segment of an asynchronous exchange later than this is skipped")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  cmd->add_option("--id", o.id, "This worker's node id, unique in the cluster")->required();
  cmd->add_option("--listen", o.listen, "ZeroMQ endpoint to bind (tcp://IP:PORT, port 0 = any; ipc://PATH)")
      ->capture_default_str();
  cmd->add_option("--peers", o.peers, "Static members: ID=ENDPOINT,... (the own id may appear)")
      ->delimiter(',');
  cmd->add_option(
         "--join", o.join,
         "Join a running cluster through this member's endpoint (repeat or comma-separate for fallbacks)")
      ->delimiter(',');
  cmd->add_flag("--bootstrap", o.bootstrap,
                "With --join: if no member answers within --startup-timeout-ms, start as the first member");
  cmd->add_option("--join-donors", o.join_donors,
                  "With --join: download the state in shares from this many members at once (a share whose "
                  "member goes silent is asked of another)")
      ->check(CLI::Range(size_t{1}, size_t{64}))
      ->capture_default_str();
  cmd->add_option("--rejoin", o.rejoin,
                  "Times a member cut off from its cluster (evicted while it did not run, or its part of a "
                  "partition yielded) joins it again by itself, downloading its state anew (0: it ends "
                  "with one line)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  cmd->add_option(
      "--advertise", o.advertise,
      "Endpoint other members reach this worker at (default: the bound one; bound to 0.0.0.0, its own "
      "--peers entry; needed with 0.0.0.0 and --join)");
  cmd->add_option("--group", o.group,
                  "Hierarchical group label (default: the host of the advertised endpoint), or auto: the "
                  "members within --group-near-ms of each other's round trip form a group, a region a group");
  cmd->add_option("--group-near-ms", o.group_near_ms,
                  "--group auto: peers whose least measured round trip is at most this share a group")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  cmd->add_option("--http", o.http, "Serve /status and /metrics on IP:PORT (port 0 = any)");
  cmd->add_option("--cluster-id", o.cluster_id, "Messages from other clusters are rejected")
      ->capture_default_str();
  cmd->add_option("--timeout-ms", o.timeout_ms, "A peer silent this long fails the step")
      ->check(CLI::Range(10, 3600000))
      ->capture_default_str();
  cmd->add_option("--startup-timeout-ms", o.startup_timeout_ms, "How long to wait for every member at start")
      ->check(CLI::Range(10, 86400000))
      ->capture_default_str();
  cmd->add_option("--max-message-bytes", o.max_message_bytes, "Inbound messages larger than this are dropped")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 34))
      ->capture_default_str();
  cmd->add_option("--max-members", o.max_members,
                  "Most members a view may hold: joiners beyond it are refused, longer member lists dropped")
      ->check(CLI::Range(size_t{2}, size_t{65536}))
      ->capture_default_str();
  cmd->add_option(
         "--send-buffer-kb", o.send_buffer_kb,
         "Kernel send buffer per peer connection, KiB. Keep the default on fast links; on a link of "
         "1 Gbit/s or less use ~5 ms of its rate (62 at 100 Mbit/s) so control messages do not queue "
         "behind bulk data")
      ->check(CLI::Range(RunOptions::kMinSendBufferKb, RunOptions::kMaxSendBufferKb))
      ->capture_default_str();
  cmd->add_option("--max-connections", o.max_connections,
                  "Outbound control connections a member keeps open at once: past it the least recently used "
                  "idle one is closed (its queued messages still go out) and reopened when next needed, so "
                  "open files do not grow with the cluster. 0: no bound")
      ->check(CLI::Range(0, 65536))
      ->capture_default_str();
  cmd->add_option("--data-path", o.data_path,
                  "Collective payloads (AllReduce-SGD): tcp = direct connections polled by the training "
                  "thread; zmq = over ZeroMQ like everything else. With CURVE they always go over ZeroMQ "
                  "(encrypted)")
      ->check(CLI::IsMember({"tcp", "zmq"}))
      ->capture_default_str();
  cmd->add_option("--shm-kb", o.shm_kb,
                  "Direct connections between members on one host move their frames through shared "
                  "memory, a pipe of this many KiB each way (4 to 1048576); 0: they keep the socket")
      ->check(CLI::Range(size_t{0}, size_t{1} << 20))
      ->capture_default_str();
  cmd->add_option("--data-congestion", o.data_congestion,
                  "TCP congestion control of the direct connections (--data-path tcp), or 'system' for "
                  "the kernel's default. One the kernel refuses is left out with a warning")
      ->check(congestion_name())
      ->capture_default_str();
  cmd->add_option(
         "--max-queued-bytes", o.max_queued_bytes,
         "Inbound bytes one peer may have waiting here; beyond it its messages are dropped (queue_full)")
      ->check(CLI::Range(size_t{1} << 20, size_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--curve-secret-key", o.curve_secret_key, "CURVE secret key file (gossipctl keygen)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--curve-cluster-key", o.curve_cluster_key, "CURVE cluster public key file")
      ->check(CLI::ExistingFile);
  cmd->add_option("--metrics-out", o.metrics_out, "Append one JSON line per epoch to this file");
  cmd->add_option(
         "--linger-ms", o.linger_ms,
         "After training, keep serving /status this long (so gossipctl collect sees the final state)")
      ->check(CLI::Range(0, 2147483647))
      ->capture_default_str();
  cmd->add_option("--inject-delay-ms,--delay-ms", o.delay_ms,
                  "Fault injection: hold every outbound message this long (network latency)")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  cmd->add_option(
         "--wan", o.wan,
         "Fault injection: a WAN topology file (gossipctl compare --topology): each outbound message "
         "held for its link's delay and jitter, a round trip more where a packet is lost; this "
         "worker is its --id there")
      ->check([](const std::string& path) {
        try {
          read_wan_topology(path);
        } catch (const UsageError& e) {
          return std::string(e.what());
        }
        return std::string();
      });
  cmd->add_option("--inject-step-delay-ms", o.step_delay_ms,
                  "Fault injection: every training step takes this much longer (a slow worker)")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  cmd->add_option("--inject-step-slowdown", o.step_slowdown,
                  "Fault injection: compute K times slower (after each step, wait K - 1 times its compute: "
                  "its time less its communication), on any machine")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  cmd->add_option(
         "--emulate-step-ms", o.emulate_step_ms,
         "Emulate a machine whose step computes this long: after each step's real compute, wait "
         "until it has taken MS (0: off), so processes sharing cores behave as machines of their own")
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  cmd->add_option("--inject-drop", o.inject_drop,
                  "Fault injection: lose each outbound message with this probability")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--inject-duplicate", o.inject_duplicate,
                  "Fault injection: deliver each outbound message twice with this probability")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--inject-reorder", o.inject_reorder,
                  "Fault injection: hold each outbound message back behind later ones with this probability")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--inject-seed", o.inject_seed,
                  "Fault injection: seed of the draws (0: from --seed and --id)")
      ->capture_default_str();
  cmd->add_option("--params-out", o.params_out,
                  "At the end, write the final parameters (raw little-endian float32) to this file");
  cmd->add_option(
      "--checkpoint-dir", o.checkpoint_dir,
      "Write checkpoints here (created if missing) and resume from the newest valid one at start");
  o.cache_dir = default_cache_dir();
  cmd->add_option(
         "--cache-dir", o.cache_dir,
         "What gossipd measures on this machine and keeps: the planners' layer profiles, one file per "
         "model")
      ->capture_default_str();
  cmd->add_option("--checkpoint-every", o.checkpoint_every,
                  "Rounds between two checkpoints (0: only the one at the end of training)")
      ->capture_default_str();
  cmd->add_option("--checkpoint-keep", o.checkpoint_keep, "How many checkpoints to keep (the newest)")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option(
      "--control-out", o.control_out,
      "Append one JSON line when listening (id, endpoint, http and data ports) and one at the end "
      "(done, stopped or failed, with the final /status): what tools read instead of the log");
  cmd->add_flag("--quiet", o.quiet, "No per-epoch progress lines");
  cmd->add_flag("--check-config", o.check_config,
                "Check the flags, data, model, segments and key files, then exit (0: OK) without starting");
  line.flags = std::make_unique<ModeFlags>(*cmd);
  line.modes.add_flags(*line.flags);
}

}  // namespace gossipd::daemon

namespace gossipd::daemon {

void parse_run_args(RunCommandLine& line, const std::vector<std::string>& args) {
  CLI::App app;
  add_run_command(app, line);
  std::vector<std::string> reversed{args.rbegin(), args.rend()};  // CLI11 takes them last first
  reversed.push_back("run");
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  line.flags->check_given(line.options.algo, line.options);
}

}  // namespace gossipd::daemon
