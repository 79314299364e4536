#pragma once

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

namespace gossipd::protocol {

// ZeroMQ authentication (ZAP, RFC 27) for one context: admits CURVE clients
// whose public key is in the allowed set and refuses everything else. It must
// be running before a CURVE ROUTER binds, or libzmq admits every client.
class ZapHandler {
 public:
  // allowed_keys are Z85 public keys. The handler thread starts here.
  ZapHandler(zmq::context_t& context, const std::vector<std::string>& allowed_keys);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  uint64_t refused() const { return refused_.load(); }

 private:
  void serve();
  bool admits(const zmq::message_t& mechanism, const zmq::message_t& credentials) const;

  zmq::socket_t socket_;
  std::set<std::string> allowed_;  // raw 32-byte keys
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> refused_{0};
  std::thread thread_;
};

}  // namespace gossipd::protocol
