#include "daemon/member/node_setup.h"

#include <functional>

#include "daemon/config/cli.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/observe/status_page.h"
#include "protocol/transport/curve.h"

namespace gossipd::daemon {
namespace {

std::chrono::microseconds micros(double ms) {
  return std::chrono::microseconds(static_cast<int64_t>(ms * 1000.0));
}

}  // namespace

std::map<std::string, protocol::LinkFault> wan_links(const WanTopology& t, const std::string& id,
                                                     const std::string& where) {
  const int me = t.host_index(id);
  if (me < 0) {
    throw UsageError("--wan " + where + " has no host '" + id + "': give each worker an --id among w0-w" +
                     std::to_string(t.hosts() - 1));
  }
  std::map<std::string, protocol::LinkFault> links;
  for (size_t k = 0; k < t.hosts(); ++k) {
    if (static_cast<int>(k) == me) continue;
    const WanLink& l = t.link(static_cast<size_t>(me), k);
    links[wan_host_name(k)] = {micros(l.delay_ms), micros(l.jitter_ms), l.loss};
  }
  return links;
}

protocol::NodeOptions node_options(const RunOptions& o) {
  protocol::NodeOptions n;
  n.id = o.id;
  n.listen = o.listen;
  n.validation.cluster_id = o.cluster_id;
  n.validation.max_message_bytes = o.max_message_bytes;
  n.validation.max_members = o.max_members;
  n.max_queued_bytes = o.max_queued_bytes;
  static_assert(RunOptions::kMaxSendBufferKb * 1024 == protocol::kDefaultSendBufferBytes,
                "gossipd run's default send buffer is the transport's");
  n.send_buffer_bytes = o.send_buffer_kb * 1024;
  n.max_connections = o.max_connections;
  n.data_path = o.data_path == "zmq" ? protocol::DataPath::kZmq : protocol::DataPath::kTcp;
  n.data_socket.congestion = o.data_congestion == "system" ? "" : o.data_congestion;
  static_assert(RunOptions::kDefaultShmKb << 10 == protocol::kDefaultSharedMemoryBytes,
                "gossipd run's default pipe is the node's");
  n.shared_memory_bytes = o.shm_kb << 10;
  n.faults.delay = std::chrono::milliseconds(o.delay_ms);
  if (!o.wan.empty()) n.faults.links = wan_links(read_wan_topology(o.wan), o.id, o.wan);
  n.faults.drop = o.inject_drop;
  n.faults.duplicate = o.inject_duplicate;
  n.faults.reorder = o.inject_reorder;
  n.faults.seed = o.inject_seed != 0 ? o.inject_seed
                                     : o.train.seed * 0x9e3779b97f4a7c15ULL ^ std::hash<std::string>{}(o.id);
  if (!o.curve_secret_key.empty()) {
    n.curve = protocol::curve_options_from_files(o.curve_secret_key, o.curve_cluster_key);
  }
  return n;
}

void describe_worker(proto::Status& s, const RunOptions& o, const protocol::Node& node) {
  s.set_id(o.id);
  s.set_algo(o.algo);
  s.set_listen(node.endpoint());
  s.set_rejoins(static_cast<uint32_t>(o.rejoined));
  const protocol::DataListener* data = node.data_listener();
  s.set_data_port(data ? data->port() : 0);
}

namespace {

// One of the transport's ConnectionCounts, sampled at each scrape.
void sample_connections(MetricsRegistry& metrics, protocol::Node& node, const std::string& name,
                        const std::string& help, const std::string& type,
                        uint64_t protocol::ConnectionCounts::*field) {
  metrics.sampled(name, help, type, [&node, field] {
    return std::vector<std::pair<Labels, double>>{{{}, double(node.transport().connection_counts().*field)}};
  });
}

void register_connection_metrics(MetricsRegistry& metrics, protocol::Node& node) {
  using C = protocol::ConnectionCounts;
  sample_connections(metrics, node, "gossipd_connections_open",
                     "Outbound connections open now (--max-connections bounds them)", "gauge", &C::open);
  sample_connections(
      metrics, node, "gossipd_connections_closed_lru_total",
      "Outbound connections closed to stay under --max-connections, the least recently used first", "counter",
      &C::closed_lru);
  sample_connections(metrics, node, "gossipd_connections_over_bound_total",
                     "Outbound connections opened past --max-connections because every open one was busy",
                     "counter", &C::over_bound);
  sample_connections(
      metrics, node, "gossipd_connections_inbound",
      "Connections other members opened to this one, open now (past --max-connections the sender "
      "of the least recently used is asked to close it)",
      "gauge", &C::inbound);
  sample_connections(metrics, node, "gossipd_connections_close_asked_total",
                     "Members asked to close their connection to this one (inbound past --max-connections)",
                     "counter", &C::close_asked);
  sample_connections(metrics, node, "gossipd_connections_closed_on_request_total",
                     "Outbound connections closed because their peer asked (it held more than its bound)",
                     "counter", &C::closed_on_request);
}

}  // namespace

void register_transport_metrics(MetricsRegistry& metrics, protocol::Node& node) {
  metrics.sampled("gossipd_messages_rejected_total", "Inbound messages dropped by validation", "counter",
                  [&node] {
                    std::vector<std::pair<Labels, double>> out;
                    for (auto [reason, count] : node.counters().snapshot()) {
                      out.push_back({{{"reason", std::string(reason)}}, static_cast<double>(count)});
                    }
                    return out;
                  });
  metrics.sampled("gossipd_non_finite_rejected_total",
                  "Tensors refused for holding NaN or an infinity, by the member that sent them", "counter",
                  [&node] {
                    std::vector<std::pair<Labels, double>> out;
                    for (const auto& [peer, count] : node.counters().against())
                      out.push_back({{{"peer", peer}}, static_cast<double>(count)});
                    return out;
                  });
  metrics.sampled(
      "gossipd_faults_injected_total", "Outbound messages hit by --inject-* faults", "counter", [&node] {
        const protocol::FaultCounts f = node.fault_counts();
        return std::vector<std::pair<Labels, double>>{{{{"kind", "drop"}}, double(f.dropped)},
                                                      {{{"kind", "duplicate"}}, double(f.duplicated)},
                                                      {{{"kind", "reorder"}}, double(f.reordered)},
                                                      {{{"kind", "retransmit"}}, double(f.retransmitted)}};
      });
  register_connection_metrics(metrics, node);
  metrics.sampled("gossipd_curve_clients_refused_total", "Connections refused by the ZAP handler", "counter",
                  [&node] {
                    return std::vector<std::pair<Labels, double>>{{{}, double(node.zap_refused())}};
                  });
}

void register_state_metrics(MetricsRegistry& metrics, WorkerState& state) {
  metrics.sampled(
      "gossipd_state",
      "1 for the state the member is in (starting, joining, training, done, stopped, failed, cut_off)",
      "gauge", [&state] {
        const std::string now = state.snapshot().state();
        return std::vector<std::pair<Labels, double>>{{{{"state", now.empty() ? "starting" : now}}, 1.0}};
      });
  metrics.sampled("gossipd_rejoins",
                  "Times this process entered its cluster again after being cut off (--rejoin)", "gauge",
                  [&state] {
                    return std::vector<std::pair<Labels, double>>{{{}, double(state.snapshot().rejoins())}};
                  });
}

HttpHandler status_routes(WorkerState& state, MetricsRegistry& metrics, protocol::Node& node,
                          const EvaluationHistory& history) {
  return [&](const std::string& path) -> HttpResponse {
    if (path == "/status") {
      proto::Status s = state.snapshot();
      s.set_messages_rejected(node.counters().total());
      return {200, "application/json", to_json(s) + "\n"};
    }
    if (path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", metrics.render()};
    if (path == "/history") return {200, "application/json", history.json()};
    if (path == "/") return {200, "text/html; charset=utf-8", status_page_html()};
    return {404, "text/plain; charset=utf-8", "not found; try /, /status, /history or /metrics\n"};
  };
}

}  // namespace gossipd::daemon
