#include "daemon/config/run_options.h"

#include <filesystem>
#include <regex>

#include "daemon/config/cli.h"
#include "protocol/collectives/data_link.h"
#include "protocol/wire/endpoint.h"

// The checks of `gossipd run`'s options that need no data, model or socket.
namespace gossipd::daemon {

std::string default_group(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0) return "local";
  const auto scheme = endpoint.find("://");
  std::string rest = scheme == std::string::npos ? endpoint : endpoint.substr(scheme + 3);
  if (!rest.empty() && rest.front() == '[') return rest.substr(1, rest.find(']') - 1);  // [v6]:port
  return rest.substr(0, rest.rfind(':'));
}

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

namespace {

// tcp://HOST:PORT or ipc://PATH; `what` names the flag in the error.
void check_endpoint(const std::string& e, const std::string& what,
                    protocol::EndpointUse use = protocol::EndpointUse::kConnect) {
  const std::string problem = protocol::endpoint_problem(e, use);
  if (!problem.empty()) throw UsageError(what + " '" + e + "' is not an endpoint: " + problem);
}

void check_writable_parent(const std::string& path, const std::string& what) {
  if (path.empty()) return;
  const auto dir = std::filesystem::absolute(path).parent_path();
  if (!std::filesystem::is_directory(dir))
    throw UsageError(what + " " + path + ": directory " + dir.string() + " does not exist");
}

}  // namespace

bool binds_everything(const std::string& endpoint) {
  return endpoint.find("//0.0.0.0:") != std::string::npos || endpoint.find("//*:") != std::string::npos;
}

void check_run_options(const RunOptions& o) {
  auto peers = parse_peers(o.peers);
  peers.erase(o.id);
  if (!o.join.empty() && !peers.empty()) {
    throw UsageError(
        "--join and --peers are alternatives: a joiner learns the members from the member it joins");
  }
  if (o.failure_timeout_ms <= 2 * o.heartbeat_ms) {
    throw UsageError(
        "--failure-timeout-ms must be more than twice --heartbeat-ms, or live members get evicted");
  }
  if (o.shm_kb > 0 && (o.shm_kb << 10) < protocol::DataLink::kMinShared) {
    throw UsageError("--shm-kb " + std::to_string(o.shm_kb) + " is below " +
                     std::to_string(protocol::DataLink::kMinShared >> 10) +
                     ": give a larger pipe, or 0 to keep the sockets");
  }
  if (o.max_queued_bytes < o.max_message_bytes) {
    throw UsageError("--max-queued-bytes " + std::to_string(o.max_queued_bytes) +
                     " is below --max-message-bytes " + std::to_string(o.max_message_bytes) +
                     ": a message of the largest size could never be queued");
  }
  check_endpoint(o.listen, "--listen", protocol::EndpointUse::kBind);
  for (const auto& [id, ep] : peers) check_endpoint(ep, "--peers " + id);
  for (const auto& ep : o.join) check_endpoint(ep, "--join");
  if (!o.advertise.empty()) {
    check_endpoint(o.advertise, "--advertise");
    if (binds_everything(o.advertise))
      throw UsageError("--advertise " + o.advertise + " is not an address others can reach");
  }
  if (!o.join.empty() && o.advertise.empty() && binds_everything(o.listen)) {
    throw UsageError("--listen " + o.listen +
                     " binds every interface: say with --advertise where members reach this one");
  }
  if (!o.http.empty() && !std::regex_match(o.http, std::regex(R"([0-9A-Za-z_.:\[\]-]+:[0-9]+)"))) {
    throw UsageError("--http '" + o.http + "' is not IP:PORT (e.g. 0.0.0.0:8080)");
  }
  if (o.curve_secret_key.empty() != o.curve_cluster_key.empty()) {
    throw UsageError(
        "--curve-secret-key and --curve-cluster-key go together (make them with gossipctl keygen)");
  }
  check_writable_parent(o.metrics_out, "--metrics-out");
  check_writable_parent(o.params_out, "--params-out");
  check_writable_parent(o.control_out, "--control-out");
  if (!o.checkpoint_dir.empty()) {
    std::error_code ec;
    const auto st = std::filesystem::status(o.checkpoint_dir, ec);
    if (std::filesystem::exists(st) && !std::filesystem::is_directory(st)) {
      throw UsageError("--checkpoint-dir " + o.checkpoint_dir + " is a file, not a directory");
    }
    if (!std::filesystem::exists(st)) check_writable_parent(o.checkpoint_dir, "--checkpoint-dir");
  }
}

}  // namespace gossipd::daemon
