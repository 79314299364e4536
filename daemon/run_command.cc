#include "daemon/run_command.h"

#include <asio.hpp>

#include <csignal>
#include <cstdio>
#include <stop_token>
#include <thread>

#include "daemon/allreduce_worker.h"
#include "daemon/gossip_worker.h"
#include "daemon/segments.h"
#include "daemon/training_loop.h"
#include "daemon/cli.h"
#include "daemon/http_server.h"
#include "daemon/membership.h"
#include "daemon/metrics.h"
#include "daemon/metrics_log.h"
#include "daemon/worker_state.h"
#include "protocol/curve.h"
#include "protocol/errors.h"
#include "protocol/node.h"
#include "protocol/reject_counters.h"
#include "trainer/dataset.h"
#include "trainer/models.h"

namespace gossipd::daemon {
namespace {

// SIGTERM/SIGINT only request a stop: the worker finishes or aborts its
// step, and sockets, files and the HTTP thread close in order. Asio's
// signal_set installs a process-wide handler, so the signal is caught
// whichever thread the kernel picks (OpenBLAS starts threads before main).
class SignalWatcher {
 public:
  explicit SignalWatcher(std::stop_source& stop) : signals_(io_, SIGINT, SIGTERM) {
    signals_.async_wait([&stop](const asio::error_code& ec, int) {
      if (!ec) stop.request_stop();
    });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~SignalWatcher() {
    io_.stop();
    thread_.join();
  }

 private:
  asio::io_context io_;
  asio::signal_set signals_;
  std::thread thread_;
};

void register_transport_metrics(MetricsRegistry& metrics, protocol::Node& node) {
  metrics.sampled("gossipd_messages_rejected_total", "Inbound messages dropped by validation", "counter",
                  [&node] {
                    std::vector<std::pair<Labels, double>> out;
                    for (auto [reason, count] : node.counters().snapshot()) {
                      out.push_back({{{"reason", std::string(reason)}}, static_cast<double>(count)});
                    }
                    return out;
                  });
  metrics.sampled("gossipd_curve_clients_refused_total", "Connections refused by the ZAP handler", "counter",
                  [&node] { return std::vector<std::pair<Labels, double>>{{{}, double(node.zap_refused())}}; });
}

HttpHandler status_routes(WorkerState& state, MetricsRegistry& metrics, protocol::Node& node) {
  return [&](const std::string& path) -> HttpResponse {
    if (path == "/status") {
      proto::Status s = state.snapshot();
      s.set_messages_rejected(node.counters().total());
      return {200, "application/json", to_json(s) + "\n"};
    }
    if (path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", metrics.render()};
    return {404, "text/plain; charset=utf-8", "not found; try /status or /metrics\n"};
  };
}

protocol::NodeOptions node_options(const RunCommandOptions& o) {
  protocol::NodeOptions n;
  n.id = o.id;
  n.listen = o.listen;
  n.validation.cluster_id = o.cluster_id;
  n.validation.max_message_bytes = o.max_message_bytes;
  if (o.curve_secret_key.empty() != o.curve_cluster_key.empty()) {
    throw UsageError("--curve-secret-key and --curve-cluster-key go together (make them with gossipctl keygen)");
  }
  if (!o.curve_secret_key.empty()) {
    n.curve = protocol::curve_options_from_files(o.curve_secret_key, o.curve_cluster_key);
  }
  return n;
}

}  // namespace

std::map<std::string, std::string> parse_peers(const std::vector<std::string>& entries) {
  std::map<std::string, std::string> peers;
  for (const auto& e : entries) {
    const auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == e.size()) {
      throw UsageError("--peers entry '" + e + "' is not ID=ENDPOINT (e.g. w2=tcp://10.0.0.2:7000)");
    }
    const std::string id = e.substr(0, eq);
    if (!peers.emplace(id, e.substr(eq + 1)).second) throw UsageError("--peers names '" + id + "' twice");
  }
  return peers;
}

CLI::App* add_run_command(CLI::App& app, RunCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("run", "Run a worker that trains with its peers");
  add_train_flags(*cmd, o.train);
  cmd->add_option("--algo", o.algo, "Averaging protocol: crossover, sgp, osgp (overlapped SGP) or allreduce")
      ->check(CLI::IsMember({"allreduce", "crossover", "sgp", "osgp"}))
      ->capture_default_str();
  cmd->add_option("--segments", o.segments, "Gossip unit: fine (one per layer block), coarse (whole model) or N pieces")
      ->capture_default_str();
  cmd->add_flag("--overlap", o.overlap,
                "crossover: gossip on a communication thread while the next step computes (sgp: use --algo osgp)");
  cmd->add_option("--heartbeat-ms", o.heartbeat_ms, "Heartbeat interval (gossip protocols)")
      ->check(CLI::Range(10, 600000))
      ->capture_default_str();
  cmd->add_option("--failure-timeout-ms", o.failure_timeout_ms,
                  "A member silent this long is evicted from the view (gossip protocols)")
      ->check(CLI::Range(50, 3600000))
      ->capture_default_str();
  cmd->add_option("--consensus-every", o.consensus_every,
                 "Measure the replicas' consensus distance every N rounds (0: never; gossip protocols)")
      ->capture_default_str();
  cmd->add_option("--segment-deadline-ms", o.segment_deadline_ms, "A gossip segment later than this is skipped")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  cmd->add_option("--id", o.id, "This worker's node id, unique in the cluster")->required();
  cmd->add_option("--listen", o.listen, "ZeroMQ endpoint to bind (tcp://IP:PORT, port 0 = any; ipc://PATH)")
      ->capture_default_str();
  cmd->add_option("--peers", o.peers, "Static members: ID=ENDPOINT,... (the own id may appear)")->delimiter(',');
  cmd->add_option("--http", o.http, "Serve /status and /metrics on IP:PORT (port 0 = any)");
  cmd->add_option("--cluster-id", o.cluster_id, "Messages from other clusters are rejected")->capture_default_str();
  cmd->add_option("--timeout-ms", o.timeout_ms, "A peer silent this long fails the step")
      ->check(CLI::Range(10, 3600000))
      ->capture_default_str();
  cmd->add_option("--startup-timeout-ms", o.startup_timeout_ms, "How long to wait for every member at start")
      ->check(CLI::Range(10, 86400000))
      ->capture_default_str();
  cmd->add_option("--max-message-bytes", o.max_message_bytes, "Inbound messages larger than this are dropped")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 34))
      ->capture_default_str();
  cmd->add_option("--curve-secret-key", o.curve_secret_key, "CURVE secret key file (gossipctl keygen)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--curve-cluster-key", o.curve_cluster_key, "CURVE cluster public key file")
      ->check(CLI::ExistingFile);
  cmd->add_option("--metrics-out", o.metrics_out, "Append one JSON line per epoch to this file");
  cmd->add_flag("--quiet", o.quiet, "No per-epoch progress lines");
  return cmd;
}

int run_run_command(const RunCommandOptions& o) {
  std::stop_source stop;
  SignalWatcher signals(stop);
  const TrainFlags& f = o.train;
  set_blas_threads(f.threads);
  auto peers = parse_peers(o.peers);
  peers.erase(o.id);
  std::vector<std::string> members{o.id};
  for (const auto& [id, ep] : peers) members.push_back(id);
  std::sort(members.begin(), members.end());
  const int rank = static_cast<int>(std::find(members.begin(), members.end(), o.id) - members.begin());

  trainer::TrainerOptions topts = trainer_options(f);
  topts.sampler.worker_index = rank;
  topts.sampler.worker_count = static_cast<int>(members.size());
  JsonLinesWriter log(o.metrics_out);
  trainer::Dataset train = trainer::load_fashion_mnist(data_dir(f), trainer::Split::kTrain);
  trainer::Dataset test = trainer::load_fashion_mnist(data_dir(f), trainer::Split::kTest);
  if (f.train_limit > 0) train = train.head(f.train_limit);
  if (f.test_limit > 0) test = test.head(f.test_limit);
  trainer::Trainer trainer(trainer::make_model(model_options(f), f.seed), train, topts);

  protocol::Node node(node_options(o));
  for (const auto& [id, ep] : peers) node.add_peer(id, ep);
  WorkerState state;
  MetricsRegistry metrics;
  register_transport_metrics(metrics, node);
  state.update([&](proto::Status& s) {
    s.set_id(o.id);
    s.set_algo(o.algo);
    s.set_listen(node.endpoint());
  });
  // Owns the view from here on: members in /status and gossipd_members.
  if (o.failure_timeout_ms <= 2 * o.heartbeat_ms) {
    throw UsageError("--failure-timeout-ms must be more than twice --heartbeat-ms, or live members get evicted");
  }
  MembershipOptions mopts;
  mopts.heartbeat_interval = std::chrono::milliseconds(o.heartbeat_ms);
  mopts.failure_timeout = std::chrono::milliseconds(o.failure_timeout_ms);
  Membership membership(node, peers, mopts, state, metrics);
  std::unique_ptr<HttpServer> http;
  if (!o.http.empty()) http = std::make_unique<HttpServer>(o.http, status_routes(state, metrics, node));
  std::printf("gossipd run: id %s rank %d/%zu listening on %s", o.id.c_str(), rank, members.size(),
              node.endpoint().c_str());
  if (http) std::printf(", http on port %u", http->port());
  std::printf("\n");
  std::fflush(stdout);

  if (o.overlap && o.algo != "crossover") {
    throw UsageError("--overlap is for --algo crossover (for SGP use --algo osgp; allreduce is synchronous)");
  }
  TrainingLoop loop(o.id, trainer, test, state, metrics, log, f.epochs, o.quiet);
  std::function<void(std::stop_token)> work;
  std::unique_ptr<AllreduceWorker> allreduce;
  std::unique_ptr<GossipWorker> gossip;
  if (o.algo == "allreduce") {
    AllreduceWorkerOptions w;
    w.train_size = train.size();
    w.timeout = std::chrono::milliseconds(o.timeout_ms);
    w.startup_timeout = std::chrono::milliseconds(o.startup_timeout_ms);
    w.failure_timeout = mopts.failure_timeout;
    allreduce = std::make_unique<AllreduceWorker>(node, members, membership, trainer, loop, w);
    work = [&](std::stop_token st) { allreduce->run(st); };
  } else {
    GossipWorkerOptions w;
    w.algo = o.algo == "crossover" ? GossipAlgo::kCrossover : o.algo == "sgp" ? GossipAlgo::kSgp : GossipAlgo::kOsgp;
    w.train_size = train.size();
    w.seed = f.seed;
    w.segments = make_segment_table(trainer.model().segments(), trainer.model().params().size(), o.segments);
    w.segment_deadline = std::chrono::milliseconds(o.segment_deadline_ms);
    w.overlap = o.overlap;
    w.consensus_every = o.consensus_every;
    w.startup_timeout = std::chrono::milliseconds(o.startup_timeout_ms);
    gossip = std::make_unique<GossipWorker>(node, members, membership, trainer, loop, state, metrics, w);
    work = [&](std::stop_token st) { gossip->run(st); };
  }
  try {
    work(stop.get_token());
  } catch (const protocol::Aborted&) {
    state.update([](proto::Status& s) { s.set_state("stopped"); });
    membership.leave();
    // Sockets close with linger 0 (a dead peer's queue must never hold up
    // shutdown): give the I/O thread a moment to put LEAVE on the wire.
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    std::printf("gossipd run: %s stopped by signal at round %llu\n", o.id.c_str(),
                static_cast<unsigned long long>(trainer.step_count()));
    node.close();
    return kExitOk;
  } catch (const protocol::TransportError& e) {
    state.update([&](proto::Status& s) {
      s.set_state("failed");
      s.set_error(e.what());
    });
    node.close();
    throw;
  }
  state.update([](proto::Status& s) { s.set_state("done"); });
  const proto::Status final_status = state.snapshot();
  std::printf("gossipd run: %s done: round %llu test_accuracy %.4f param_hash %s\n", o.id.c_str(),
              static_cast<unsigned long long>(trainer.step_count()), final_status.test_accuracy(),
              param_hash(trainer.model().params()).c_str());
  std::fflush(stdout);
  node.close();
  return kExitOk;
}

}  // namespace gossipd::daemon
