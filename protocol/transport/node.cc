#include "protocol/transport/node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <zmq.hpp>

#include "protocol/transport/lanes.h"
#include "protocol/transport/shared_payload_transport.h"
#include "protocol/transport/zap_handler.h"
#include "protocol/transport/zmq_transport.h"

namespace gossipd::protocol {

Node::Node(NodeOptions options)
    : options_(std::move(options)),
      reject_log_(options_.id, counters_, options_.reject_log_interval),
      validator_(options_.validation, reject_log_),
      mailbox_(reject_log_, 10000, options_.max_queued_bytes) {
  context_ = std::make_unique<zmq::context_t>(options_.io_threads);
  // The ZAP handler must be bound before the CURVE ROUTER, or libzmq lets
  // every client in.
  if (options_.curve) zap_ = std::make_unique<ZapHandler>(*context_, options_.curve->allowed_client_keys);
  ZmqTransportOptions t;
  t.node_id = options_.id;
  t.listen = options_.listen;
  t.send_hwm = options_.send_hwm;
  t.recv_hwm = options_.recv_hwm;
  t.send_buffer_bytes = options_.send_buffer_bytes;
  t.max_connections = options_.max_connections;
  t.max_frame_bytes = static_cast<int64_t>(options_.validation.max_message_bytes);
  t.curve = options_.curve;
  transport_ = std::make_unique<ZmqTransport>(*context_, std::move(t));
  const bool tcp = options_.listen.rfind("tcp://", 0) == 0;
  // Not with CURVE (the payloads would leave the encryption) nor with
  // injected faults (they must apply to every byte).
  if (tcp && options_.shared_memory_bytes > 0 && !options_.curve && !options_.faults.any()) {
    SharedPayloadOptions shared;
    // Half a direct link's pipes: a ring per peer sent to, up to 16 of them.
    shared.ring_bytes = std::max(options_.shared_memory_bytes / 2, kMinPayloadRingBytes) / 64 * 64;
    auto payloads = std::make_unique<SharedPayloadTransport>(std::move(transport_), shared);
    payloads_ = payloads.get();
    transport_ = std::move(payloads);
  }
  if (options_.faults.any()) {
    dice_ = std::make_unique<FaultDice>(options_.faults);
    transport_ = std::make_unique<FaultInjectingTransport>(std::move(transport_), *dice_);
  }
  if (options_.data_path == DataPath::kTcp && tcp && !options_.curve) {
    keep_congestion_if_taken();
    data_ = std::make_unique<DataListener>(options_.id, endpoint_host(options_.listen), validator_,
                                           options_.data_socket, options_.data_hello_timeout);
  }
  start();
}

Node::Node(NodeOptions options, InProcHub& hub)
    : options_(std::move(options)),
      reject_log_(options_.id, counters_, options_.reject_log_interval),
      validator_(options_.validation, reject_log_),
      mailbox_(reject_log_, 10000, options_.max_queued_bytes) {
  transport_ = std::make_unique<InProcTransport>(hub, options_.id);
  start();
}

Node::~Node() { close(); }

void Node::keep_congestion_if_taken() {
  std::string& name = options_.data_socket.congestion;
  if (name.empty()) return;
  const std::string why = congestion_refusal(name);
  if (why.empty()) return;
  spdlog::warn(
      "node '{}': the kernel refuses TCP congestion control '{}' ({}): direct connections keep the system's; "
      "pick one of /proc/sys/net/ipv4/tcp_allowed_congestion_control (gossipd run --data-congestion)",
      options_.id, name, why);
  name.clear();
}

void Node::start() {
  validator_.add_member(options_.id);
  for (const auto& m : options_.initial_members) validator_.add_member(m);
  if (!options_.receive_thread) return;
  std::string close_request;
  GOSSIPD_ENFORCE(envelope(proto::CLOSE_CONNECTION).SerializeToString(&close_request),
                  "an envelope serialises");
  dispatcher_ = std::make_unique<Dispatcher>(*transport_, validator_, mailbox_, std::move(close_request));
}

void Node::add_peer(const std::string& peer, const std::string& endpoint) {
  transport_->connect(peer, endpoint);  // first: an endpoint it cannot take must not leave a member behind
  transport_->connect(lane_name(Lane::kControl, peer), endpoint);
  {
    std::lock_guard lock(peers_mu_);
    peer_endpoints_[peer] = endpoint;
  }
  validator_.add_member(peer);
}

std::string Node::peer_endpoint(const std::string& peer) const {
  std::lock_guard lock(peers_mu_);
  const auto it = peer_endpoints_.find(peer);
  return it == peer_endpoints_.end() ? "" : it->second;
}

void Node::remove_peer(const std::string& peer) {
  {
    std::lock_guard lock(peers_mu_);
    peer_endpoints_.erase(peer);
  }
  validator_.remove_member(peer);
  transport_->disconnect(peer);
  transport_->disconnect(lane_name(Lane::kControl, peer));
}

// The lane where the connection bound has room for two connections a peer
// and is not below the default: a bound set lower asks for fewer
// connections, and at 36 members with room for 16 the lanes' connections
// (opened while a member knew few peers) closing and reopening the data's
// lost segments or stalled rounds under load (daemon/README.md).
void Node::send_control(const std::string& peer, std::vector<OutFrame> frames,
                        std::chrono::milliseconds timeout) {
  const int bound = options_.max_connections;
  bool lane = bound == 0;
  if (bound >= kDefaultMaxConnections) {
    std::lock_guard lock(peers_mu_);
    lane = 2 * peer_endpoints_.size() <= static_cast<size_t>(bound);
  }
  transport_->send(lane ? lane_name(Lane::kControl, peer) : peer, std::move(frames), timeout);
}

proto::Envelope Node::envelope(proto::MessageType type) const {
  proto::Envelope e;
  e.set_version(options_.validation.version);
  e.set_cluster_id(options_.validation.cluster_id);
  e.set_sender(options_.id);
  e.set_type(type);
  return e;
}

void Node::close() {
  if (dispatcher_) dispatcher_->stop();
  data_.reset();
  if (transport_) transport_->close();
  zap_.reset();
  // The context is destroyed last (member order); closing it waits for
  // sockets, which are all closed (linger 0) by now.
}

uint64_t Node::zap_refused() const { return zap_ ? zap_->refused() : 0; }

uint64_t Node::shared_payload_bytes() const { return payloads_ ? payloads_->shared_bytes_sent() : 0; }

bool Node::shares_memory_with(const std::string& peer) const {
  if (!data_ || options_.shared_memory_bytes == 0 || options_.faults.any()) return false;
  return same_host(endpoint(), peer_endpoint(peer));
}

}  // namespace gossipd::protocol
