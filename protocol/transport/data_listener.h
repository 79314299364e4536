#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "protocol/transport/data_socket.h"
#include "protocol/wire/validator.h"

namespace gossipd::protocol {

// The accepting end of the direct data path: one listening socket per Node
// and a thread that takes connections, reads their Hello with a deadline and
// hands each one that a collective expects to the group that expects it.
// Nothing else gets through: a connection must present a nonce this node
// announced to that very member over the control channel (expect()), from
// the same cluster and protocol version, within the hello timeout
// (kHelloTimeout unless the Node says otherwise). Everything
// refused is counted as a reject (RejectLog) and closed. An accepted one is
// acknowledged and kept until its group take()s it. The thread is never on a
// collective's critical path: once taken, a connection is driven by the
// thread that owns it.
class DataListener {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kHelloTimeout{5};
  // Connections still owing their Hello; a new one past it evicts the oldest.
  static constexpr size_t kMaxPending = 64;

  DataListener(std::string node_id, const std::string& host, Validator& validator, DataSocketTuning tuning,
               std::chrono::milliseconds hello_timeout = kHelloTimeout);
  ~DataListener();
  DataListener(const DataListener&) = delete;
  DataListener& operator=(const DataListener&) = delete;

  uint16_t port() const { return port_; }

  // A fresh nonce under which one connection from `peer` will be accepted.
  uint64_t expect(const std::string& peer);
  // The connection presented with `nonce` if it came (the expectation is
  // then fulfilled and gone), else an empty Fd. Does not wait.
  Fd take(uint64_t nonce);
  // Gives up an expectation (its connection, if it came, is closed).
  void forget(uint64_t nonce);

  // Connections refused so far (also counted as rejects).
  uint64_t refused() const;

 private:
  struct Pending {
    Fd fd;
    std::vector<std::byte> hello;
    Clock::time_point deadline;
  };
  struct Expected {
    std::string peer;
    Fd fd;
  };
  void loop(std::stop_token stop);
  void accept_all();
  bool read_hello(Pending& p);  // false when done with it (handed over or refused)
  void conclude(Pending& p);
  void refuse(Pending& p, RejectReason reason, const std::string& who, const std::string& detail);

  std::string node_id_;
  Validator& validator_;
  DataSocketTuning tuning_;
  std::chrono::milliseconds hello_timeout_;
  Fd listen_;
  uint16_t port_ = 0;
  Fd wake_[2];                    // a pipe: the destructor wakes the thread
  std::vector<Pending> pending_;  // the thread's own

  mutable std::mutex mu_;
  std::map<uint64_t, Expected> expected_;
  std::mt19937_64 rng_;
  uint64_t refused_ = 0;
  std::jthread thread_;
};

}  // namespace gossipd::protocol
