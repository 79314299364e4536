#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "protocol/transport/transport.h"

namespace gossipd::protocol {

// One peer's link as a wide-area network adds to it (gossipd run --wan):
// its one-way delay, a uniform jitter of +-jitter around it, and the
// fraction of its packets lost. TCP loses no message: a lost packet costs
// its message one round trip more (a fast retransmit), drawn per message as
// 1 - (1 - loss)^packets. Messages to one peer keep their order (a message
// never leaves before the one sent ahead of it), as over one TCP stream.
struct LinkFault {
  std::chrono::microseconds delay{0};
  std::chrono::microseconds jitter{0};
  double packet_loss = 0;
};

// Network faults injected on the sending side, for experiments and tests on
// one machine (the kernel here has no netem): `gossipd run --inject-*`.
struct FaultOptions {
  std::chrono::milliseconds delay{0};      // every message is held this long
  double drop = 0;                         // probability a message is lost
  double duplicate = 0;                    // probability it is delivered twice
  double reorder = 0;                      // probability it is held back behind later ones
  uint64_t seed = 1;                       // the draws are reproducible per seed
  std::map<std::string, LinkFault> links;  // by peer id: a WAN's links (none: no link adds anything)

  bool any() const { return delay.count() > 0 || drop > 0 || duplicate > 0 || reorder > 0 || !links.empty(); }
};

// How many messages each fault hit (retransmitted: a WAN link's lost packet).
struct FaultCounts {
  uint64_t sent = 0, dropped = 0, duplicated = 0, reordered = 0, retransmitted = 0;
};

// The draws: whether one outbound message is lost, delivered twice, and when
// it is due (later when reordered). Shared by the ZeroMQ path
// (FaultInjectingTransport) and the direct data path (GroupWire), so one
// seed and one set of counts cover both. Thread-safe.
class FaultDice {
 public:
  using Clock = std::chrono::steady_clock;
  explicit FaultDice(FaultOptions options) : options_(options), rng_(options.seed) {}

  struct Roll {
    bool drop = false;
    bool duplicate = false;
    Clock::time_point due;
  };
  // One message of `bytes` to `peer`.
  Roll roll(const std::string& peer, size_t bytes);
  FaultCounts counts() const;
  // Loss, duplication and reordering apply from here on (delay always does).
  void arm() { armed_.store(true); }

 private:
  Clock::time_point over_link(const std::string& peer, size_t bytes, Clock::time_point due);  // with mu_ held
  FaultOptions options_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  FaultCounts counts_;
  std::map<std::string, Clock::time_point> last_due_;  // per WAN peer: its messages keep their order
  std::atomic<bool> armed_{false};
};

// Wraps a transport and applies the dice to every outbound message (loss,
// duplication and reordering only once the dice are armed).
// send() returns at once; a held message that the wrapped transport then
// cannot take (a full queue, a peer gone meanwhile) is lost, as the network
// would lose it. A reordered message is held `delay` + 10 ms longer, so
// messages sent after it to the same peer overtake it. reset() and
// disconnect() drop what is held for that peer, so a collective's borrowed
// buffers are released as with the plain transport.
class FaultInjectingTransport : public Transport {
 public:
  FaultInjectingTransport(std::unique_ptr<Transport> inner, FaultDice& dice);
  ~FaultInjectingTransport() override;

  const std::string& node_id() const override { return inner_->node_id(); }
  std::string endpoint() const override { return inner_->endpoint(); }
  void connect(const std::string& peer, const std::string& endpoint) override;
  void disconnect(const std::string& peer) override;
  void reset(const std::string& peer) override;
  void send(const std::string& peer, std::vector<OutFrame> frames,
            std::chrono::milliseconds timeout) override;
  std::optional<RawMessage> receive(std::chrono::milliseconds timeout) override {
    return inner_->receive(timeout);
  }
  void flush_on_close(std::chrono::milliseconds bound) override { inner_->flush_on_close(bound); }
  ConnectionCounts connection_counts() const override { return inner_->connection_counts(); }
  void ask_to_close(const std::string& request) override { inner_->ask_to_close(request); }
  void release(const std::string& peer) override { inner_->release(peer); }
  void close() override;

 private:
  struct Held {
    std::string peer;
    std::vector<OutFrame> frames;
  };
  using Due = std::pair<std::chrono::steady_clock::time_point, uint64_t>;  // time, then sending order
  void hold(std::chrono::steady_clock::time_point due, Held h);            // with mu_ held
  void drop_held(const std::string& peer);
  void loop(std::stop_token stop);

  std::unique_ptr<Transport> inner_;
  FaultDice& dice_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  std::map<Due, Held> held_;
  uint64_t next_seq_ = 0;
  std::set<std::string> peers_;
  std::jthread thread_;
};

}  // namespace gossipd::protocol
