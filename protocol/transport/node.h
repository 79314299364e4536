#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "protocol/transport/curve.h"
#include "protocol/transport/data_listener.h"
#include "protocol/transport/dispatcher.h"
#include "protocol/transport/fault_injection.h"
#include "protocol/transport/inproc_transport.h"

// ZeroMQ stays behind the transport: only node.cc and the ZeroMQ files see it.
namespace zmq {
class context_t;
}

namespace gossipd::protocol {

class SharedPayloadTransport;

class ZapHandler;

enum class DataPath { kTcp, kZmq };

// NodeOptions::shared_memory_bytes unless told otherwise.
inline constexpr size_t kDefaultSharedMemoryBytes = size_t{4} << 20;

struct NodeOptions {
  std::string id;  // node id, unique in the cluster
  std::string listen = "tcp://127.0.0.1:0";
  ValidatorOptions validation;        // cluster id, version, max_message_bytes
  std::optional<CurveOptions> curve;  // CURVE + ZAP when set
  int io_threads = 1;                 // libzmq I/O threads
  int send_hwm = 1000;
  int recv_hwm = 1000;
  int send_buffer_bytes = kDefaultSendBufferBytes;  // per connection (transport.h)
  int max_connections = kDefaultMaxConnections;     // outbound ZeroMQ connections open at once; 0 = any
  // Inbound bytes one sender may have waiting in the mailbox (Mailbox).
  size_t max_queued_bytes = size_t{1} << 30;
  std::chrono::milliseconds reject_log_interval{10000};
  // Ids accepted from the first message on: a peer that is already up sends
  // the moment this node binds, before add_peer() could be called.
  std::vector<std::string> initial_members;
  // Faults injected on every outbound message (FaultInjectingTransport):
  // latency, loss, duplication, reordering. Off by default.
  FaultOptions faults;
  // Collective and tensor payloads: kTcp = the direct data path (DataListener,
  // GroupWire) beside ZeroMQ; kZmq = over ZeroMQ like everything else. The
  // direct path needs a tcp:// endpoint and stays off with CURVE (it would
  // carry payloads in the clear; protocol/README.md says what that costs).
  DataPath data_path = DataPath::kTcp;
  // Direct connections between members on one host (the same address, or
  // both on loopback) move their frames through shared memory, pipes of
  // this many bytes each way (DataLink); 0: always the socket. Never with
  // injected faults (they must apply) nor with CURVE (no direct path).
  size_t shared_memory_bytes = kDefaultSharedMemoryBytes;
  // Socket settings of direct connections (buffers, congestion control). A
  // congestion control the kernel refuses is dropped with a warning.
  DataSocketTuning data_socket;
  // A direct connection that has not sent its whole Hello by then is refused.
  std::chrono::milliseconds data_hello_timeout = DataListener::kHelloTimeout;
  // false: no receive thread reads the transport (the fuzz targets validate
  // and deliver messages themselves, thousands of Nodes a second).
  bool receive_thread = true;
};

// Everything one daemon needs to talk: the ZeroMQ context (never global), the
// ZAP handler, the transport, the validator and the receive thread. Several
// Nodes can live in one process (tests run whole clusters as threads).
class Node {
 public:
  explicit Node(NodeOptions options);         // ZeroMQ transport
  Node(NodeOptions options, InProcHub& hub);  // in-process transport
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  const std::string& id() const { return options_.id; }
  std::string endpoint() const { return transport_->endpoint(); }
  const NodeOptions& options() const { return options_; }

  // The direct data path's listener; nullptr when payloads go over ZeroMQ.
  DataListener* data_listener() { return data_.get(); }
  const DataListener* data_listener() const { return data_.get(); }
  // The endpoint add_peer() was given ("" for an unknown peer).
  std::string peer_endpoint(const std::string& peer) const;
  // The fault draws shared by both paths; nullptr without --inject-*.
  FaultDice* fault_dice() { return dice_.get(); }

  // Makes `peer` a member (messages from it are accepted) and reachable;
  // throws (and changes nothing) when the transport cannot take `endpoint`.
  void add_peer(const std::string& peer, const std::string& endpoint);
  void remove_peer(const std::string& peer);
  // Sends to `peer` on its control lane (lanes.h), which add_peer()
  // connected: what goes there does not wait behind the bulk data sent to
  // `peer`. Where max_connections is below its default or has no room for
  // two connections a peer, on the peer's own connection. Throws as transport().send() does.
  void send_control(const std::string& peer, std::vector<OutFrame> frames, std::chrono::milliseconds timeout);

  // An envelope with this node's version, cluster and sender filled in.
  proto::Envelope envelope(proto::MessageType type) const;

  Transport& transport() { return *transport_; }
  Validator& validator() { return validator_; }
  Mailbox& mailbox() { return mailbox_; }
  RejectCounters& counters() { return counters_; }
  RejectLog& reject_log() { return reject_log_; }
  // Clients the ZAP handler turned away (0 without CURVE).
  uint64_t zap_refused() const;
  // Payload bytes sent to members on this host through shared memory
  // (SharedPayloadTransport); 0 where it is off.
  uint64_t shared_payload_bytes() const;
  // Injected loss, duplication and reordering start here (the delay applies
  // from the start): a start-up barrier has no retransmission, training does
  // not need one.
  void arm_faults() {
    if (dice_) dice_->arm();
  }
  // What the injected faults hit (all 0 without --inject-*).
  FaultCounts fault_counts() const { return dice_ ? dice_->counts() : FaultCounts{}; }

  // Payload bytes of the collective and tensor pieces this node has sent
  // (either data path; headers and envelopes not counted): what a planner's
  // words are compared with.
  uint64_t payload_bytes_sent() const { return payload_sent_.load(std::memory_order_relaxed); }
  void count_payload_sent(uint64_t bytes) { payload_sent_.fetch_add(bytes, std::memory_order_relaxed); }

  // Whether direct links to `peer` go through shared memory (DataLink):
  // the direct path is on, NodeOptions::shared_memory_bytes > 0, no
  // injected faults, and both endpoints on this host (the same address, or
  // both on loopback). Planners price that link by it.
  bool shares_memory_with(const std::string& peer) const;

  // True the first time only: a node says once that /dev/shm gave it no
  // segment (GroupWire), however many links fall back to their sockets.
  bool first_shm_warning() { return !shm_warned_.exchange(true); }

  // Stops the receive thread and closes the sockets; idempotent.
  void close();

 private:
  void start();
  void keep_congestion_if_taken();  // options_.data_socket.congestion, or "" with a warning

  NodeOptions options_;
  std::unique_ptr<zmq::context_t> context_;
  std::unique_ptr<ZapHandler> zap_;
  RejectCounters counters_;
  RejectLog reject_log_;
  Validator validator_;
  Mailbox mailbox_;
  std::unique_ptr<FaultDice> dice_;  // before the transport that uses it
  std::unique_ptr<Transport> transport_;
  SharedPayloadTransport* payloads_ = nullptr;  // inside transport_, when on
  std::unique_ptr<DataListener> data_;
  std::unique_ptr<Dispatcher> dispatcher_;
  mutable std::mutex peers_mu_;
  std::map<std::string, std::string> peer_endpoints_;
  std::atomic<uint64_t> payload_sent_{0};
  std::atomic<bool> shm_warned_{false};
};

}  // namespace gossipd::protocol
