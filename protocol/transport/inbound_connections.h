#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace gossipd::protocol {

// The connections other members opened to this one, by descriptor, and which
// of them to ask to close when there are more than the bound. A ROUTER cannot
// close one inbound connection without losing what is in flight on it (the
// sender's DEALER would reconnect), so the close is the sender's: it is asked
// (CLOSE_CONNECTION) and closes its side as its own bound would, flushing
// first. ZmqTransport feeds it from the socket monitor (ACCEPTED,
// DISCONNECTED) and each message's ZMQ_SRCFD; pure bookkeeping, so the
// choice is tested without sockets.
//
// Receive thread only, but for size().
class InboundConnections {
 public:
  using Clock = std::chrono::steady_clock;

  // A connection asked to close and still open after `ask_again` (its sender
  // was sending, or the request was lost) may be asked again.
  explicit InboundConnections(size_t bound, std::chrono::milliseconds ask_again = std::chrono::seconds(1));

  void accepted(int fd, Clock::time_point now);
  void disconnected(int fd);
  // A message from `node` came in on `fd` (a descriptor not seen accepted yet
  // is taken as accepted: its event may still be on the way). `once`: the
  // connection carries one message and closes by itself (another member's
  // request to close, ZmqTransport): counted, never asked, and not a reason
  // to ask anyone else (asking it would start a chain across the cluster).
  void received(int fd, const std::string& node, Clock::time_point now, bool once = false);

  // The members to ask now, the least recently used connection first: as many
  // as there are connections past the bound, less those asked and not yet
  // gone, each member once. Connections that never carried a message (no
  // member to ask) are counted but not asked.
  std::vector<std::string> to_close(Clock::time_point now);

  size_t size() const { return count_.load(std::memory_order_relaxed); }
  size_t bound() const { return bound_; }

 private:
  struct Connection {
    std::string node;
    Clock::time_point last;
    Clock::time_point asked{};  // epoch: never
    bool once = false;
  };
  bool asked_recently(const Connection& c, Clock::time_point now) const;

  size_t bound_;
  std::chrono::milliseconds ask_again_;
  std::unordered_map<int, Connection> by_fd_;
  std::atomic<size_t> count_{0};
};

}  // namespace gossipd::protocol
