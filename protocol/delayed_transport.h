#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "protocol/transport.h"

namespace gossipd::protocol {

// Holds every outbound message for a fixed time before handing it to the
// wrapped transport: network latency for experiments on one machine, where
// the kernel has no netem (`gossipd run --delay-ms`). Order is kept. send()
// returns at once; a message the wrapped transport then cannot take (a full
// queue, a peer gone meanwhile) is dropped and logged, as the network would
// lose it. reset() and disconnect() drop what is held for that peer, so a
// collective's borrowed buffers are released as with the plain transport.
class DelayedTransport : public Transport {
 public:
  DelayedTransport(std::unique_ptr<Transport> inner, std::chrono::milliseconds delay);
  ~DelayedTransport() override;

  const std::string& node_id() const override { return inner_->node_id(); }
  std::string endpoint() const override { return inner_->endpoint(); }
  void connect(const std::string& peer, const std::string& endpoint) override;
  void disconnect(const std::string& peer) override;
  void reset(const std::string& peer) override;
  void send(const std::string& peer, std::vector<OutFrame> frames, std::chrono::milliseconds timeout) override;
  std::optional<RawMessage> receive(std::chrono::milliseconds timeout) override { return inner_->receive(timeout); }
  void close() override;

 private:
  struct Held {
    std::chrono::steady_clock::time_point due;
    std::string peer;
    std::vector<OutFrame> frames;
  };
  void drop_held(const std::string& peer);
  void loop(std::stop_token stop);

  std::unique_ptr<Transport> inner_;
  std::chrono::milliseconds delay_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Held> held_;
  std::set<std::string> peers_;
  std::jthread thread_;
};

}  // namespace gossipd::protocol
