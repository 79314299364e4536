#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <zmq.hpp>

#include "protocol/transport/curve.h"
#include "protocol/transport/inbound_connections.h"
#include "protocol/transport/transport.h"

namespace gossipd::protocol {

// A ZeroMQ routing id holds 255 bytes; each connection adds 9 to the node id.
constexpr size_t kMaxNodeIdBytes = 246;

struct ZmqTransportOptions {
  std::string node_id;                       // also the DEALERs' routing id
  std::string listen = "tcp://127.0.0.1:0";  // tcp:// or ipc://; port 0 = any
  int send_hwm = 1000;                       // messages queued per peer
  int recv_hwm = 1000;
  // Per-frame cap enforced by libzmq itself (a bigger frame drops the
  // connection before it is buffered). 0 = off; the validator checks totals.
  int64_t max_frame_bytes = 0;
  std::optional<CurveOptions> curve;                // off when empty
  int send_buffer_bytes = kDefaultSendBufferBytes;  // SO_SNDBUF (transport.h)
  // Outbound connections open at once, and inbound ones before the least
  // recently used sender is asked to close its (InboundConnections); 0 = no
  // bound (transport.h).
  int max_connections = kDefaultMaxConnections;
  // How long frames still queued on a connection closed for the bound keep
  // going out (its descriptor is held as long).
  std::chrono::milliseconds close_linger{10000};
};

// ZeroMQ transport: one ROUTER bound for inbound, one DEALER per peer it
// sends to, opened on the first send. Past max_connections open DEALERs the
// least recently used one is closed (its queued frames still go out, for up
// to close_linger) and opened again when next needed. Past max_connections
// inbound ones (the ROUTER's monitor counts them) the sender of the least
// recently used is asked to close its DEALER (ask_to_close()) and closes it
// the same way when asked (release()).
//
// Every DEALER connects with its own routing id: the node id, a NUL, and 8
// bytes unique to the connection, which receive() strips. With the node id
// alone, a peer's ROUTER would hand a reopened connection the id of the one
// still flushing (ZMQ_ROUTER_HANDOVER) and drop what that one still carried;
// with its own id each delivers all it has (one may overtake the other).
// Socket buffers are set, not left to Linux autotuning: large ones are what
// make loopback fast (the send side is an option, see above).
class ZmqTransport : public Transport {
 public:
  // `context` must outlive the transport (the Node owns both).
  ZmqTransport(zmq::context_t& context, ZmqTransportOptions options);
  ~ZmqTransport() override;
  ZmqTransport(const ZmqTransport&) = delete;
  ZmqTransport& operator=(const ZmqTransport&) = delete;

  const std::string& node_id() const override { return options_.node_id; }
  std::string endpoint() const override { return endpoint_; }
  void connect(const std::string& peer, const std::string& endpoint) override;
  void disconnect(const std::string& peer) override;
  void reset(const std::string& peer) override;
  void send(const std::string& peer, std::vector<OutFrame> frames,
            std::chrono::milliseconds timeout) override;
  std::optional<RawMessage> receive(std::chrono::milliseconds timeout) override;
  void flush_on_close(std::chrono::milliseconds bound) override {
    close_linger_ms_ = static_cast<int>(bound.count());
  }
  void close() override;
  ConnectionCounts connection_counts() const override;
  void ask_to_close(const std::string& request) override;
  void release(const std::string& peer) override;

 private:
  struct Peer {
    std::timed_mutex mutex;  // zmq sockets are not thread-safe; send() is
    std::string endpoint;
    zmq::socket_t socket;                  // closed until the first send, and after the bound closed it
    std::atomic<bool> connected{false};    // socket is open (read without the mutex)
    std::atomic<int64_t> last_send_ns{0};  // steady clock
  };

  zmq::socket_t make_dealer(const std::string& endpoint, uint64_t counter);  // counter: of the routing id
  void ask(Peer& p, const std::string& request);
  std::shared_ptr<Peer> peer_or_null(const std::string& peer) const;
  std::shared_ptr<Peer> find_peer(const std::string& peer) const;  // throws PeerGone
  void open(Peer& p);                                              // p.mutex held
  bool close_least_recent(const Peer& p);                          // another idle one; false when none
  void close_socket(Peer& p, int linger_ms);                       // p.mutex held
  void watch_inbound();                                            // the ROUTER's monitor, when bounded
  void drain_monitor();

  zmq::context_t& context_;
  ZmqTransportOptions options_;
  zmq::socket_t router_;
  zmq::socket_t monitor_;  // the ROUTER's connection events (PAIR); closed without a bound
  std::unique_ptr<InboundConnections> inbound_;
  std::string endpoint_;
  mutable std::shared_mutex peers_mutex_;
  std::map<std::string, std::shared_ptr<Peer>> peers_;
  std::atomic<bool> closed_{false};
  std::atomic<int> close_linger_ms_{0};  // flush_on_close
  std::mutex open_mutex_;                // opening under the bound, one at a time
  std::atomic<uint64_t> open_{0}, opened_{0}, closed_lru_{0}, over_bound_{0};
  std::atomic<uint64_t> close_asked_{0}, closed_on_request_{0};
  uint64_t asked_once_ = 0;        // connections opened for one request (receive thread)
  uint32_t connection_nonce_ = 0;  // per transport: a restarted process never reuses an id
};

}  // namespace gossipd::protocol
