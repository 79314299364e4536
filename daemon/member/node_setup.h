#pragma once

#include <map>
#include <string>

#include "daemon/config/run_options.h"
#include "daemon/config/wan_topology.h"
#include "daemon/observe/evaluation_history.h"
#include "daemon/observe/http_server.h"
#include "daemon/observe/metrics.h"
#include "daemon/observe/worker_state.h"
#include "protocol/transport/node.h"

namespace gossipd::daemon {

// The transport's options from gossipd run's (ids, limits, faults, CURVE).
protocol::NodeOptions node_options(const RunOptions& options);

// What gossipd run --wan adds to the messages of the worker `id` (a host of
// `topology`, read from `where`) to each other host: its link's delay,
// jitter and packet loss. Throws UsageError when `id` is not a host there.
std::map<std::string, protocol::LinkFault> wan_links(const WanTopology& topology, const std::string& id,
                                                     const std::string& where);

// The transport's counts as metrics: rejects by reason, injected faults,
// CURVE clients refused.
void register_transport_metrics(MetricsRegistry& metrics, protocol::Node& node);

// What /status says of the worker from the start: id, algo, the endpoint
// bound, the direct data path's port.
// The member's state as a metric (gossipd_state{state} 1 for the state it
// is in: joining, training, done, stopped, failed, cut_off) and how many
// times this process entered its cluster again after being cut off
// (gossipd_rejoins): what deploy/prometheus/'s alerts read.
void register_state_metrics(MetricsRegistry& metrics, WorkerState& state);

void describe_worker(proto::Status& status, const RunOptions& options, const protocol::Node& node);

// /status (the worker's state as JSON), /metrics (Prometheus text),
// /history (its evaluations, JSON) and / (the page that shows them).
HttpHandler status_routes(WorkerState& state, MetricsRegistry& metrics, protocol::Node& node,
                          const EvaluationHistory& history);

}  // namespace gossipd::daemon
