#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <zmq.hpp>

#include "protocol/curve.h"
#include "protocol/transport.h"

namespace gossipd::protocol {

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
};

// ZeroMQ transport: one ROUTER bound for inbound, one DEALER per peer.
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

 private:
  struct Peer {
    std::timed_mutex mutex;  // zmq sockets are not thread-safe; send() is
    std::string endpoint;
    zmq::socket_t socket;
  };

  zmq::socket_t make_dealer(const std::string& endpoint);
  std::shared_ptr<Peer> find_peer(const std::string& peer) const;

  zmq::context_t& context_;
  ZmqTransportOptions options_;
  zmq::socket_t router_;
  std::string endpoint_;
  mutable std::shared_mutex peers_mutex_;
  std::map<std::string, std::shared_ptr<Peer>> peers_;
  std::atomic<bool> closed_{false};
  std::atomic<int> close_linger_ms_{0};  // flush_on_close
};

}  // namespace gossipd::protocol
