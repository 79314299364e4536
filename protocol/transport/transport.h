#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/wire/message.h"

namespace gossipd::protocol {

class ModelledLosses;

// SO_SNDBUF of every connection: what TCP may hold unsent or unacknowledged
// towards one peer. The default lets one wake-up of the I/O thread move a
// whole pipeline piece on fast links (loopback, 10 Gbit/s). On a slow link
// all of it can sit in the host's queue ahead of a small control message:
// there ~5 ms of the link rate is enough (tests/bench/README.md).
constexpr int kDefaultSendBufferBytes = 4 << 20;

// Outbound connections a member keeps open at once (gossipd run
// --max-connections): the least recently used idle one is closed to open
// another, so a member's descriptors do not grow with the cluster.
constexpr int kDefaultMaxConnections = 64;

// What a transport's connection bound did (ZmqTransport; zeros elsewhere).
struct ConnectionCounts {
  uint64_t open = 0;        // outbound connections open now
  uint64_t opened = 0;      // opened since the start
  uint64_t closed_lru = 0;  // closed to stay under the bound
  // Opened past the bound because every open one was busy (sent to within
  // the idle time): the bound holds again once one of them goes idle.
  uint64_t over_bound = 0;
  uint64_t inbound = 0;            // connections other members opened to this one, open now
  uint64_t close_asked = 0;        // members asked to close theirs (inbound past the bound)
  uint64_t closed_on_request = 0;  // outbound connections closed because their peer asked
};

// How daemons move frames. Narrow on purpose: protocols and collectives are
// written against this, and tests swap in the in-process implementation.
// send() may be called from several threads; receive() from one thread only.
class Transport {
 public:
  virtual ~Transport() = default;

  virtual const std::string& node_id() const = 0;
  // The endpoint peers connect to (the real port when bound to port 0).
  virtual std::string endpoint() const = 0;

  // Makes `peer` reachable at `endpoint`: idempotent for the same endpoint; a
  // new endpoint replaces the connection. The ZeroMQ transport connects on
  // the first send and may close the connection again (the bound above).
  virtual void connect(const std::string& peer, const std::string& endpoint) = 0;
  // Forgets the peer; its queued outbound messages are dropped.
  virtual void disconnect(const std::string& peer) = 0;
  // Drops the peer's queued outbound messages (releasing their owners) and
  // reconnects. A collective that failed calls it before its buffer goes away.
  virtual void reset(const std::string& peer) = 0;

  // Queues a multipart message (frames[0] = envelope). Throws PeerTimeout when
  // the peer's queue stays full for `timeout` (or another sender to the
  // peer holds it that long, waiting for room), PeerGone for a peer that is
  // not connected (never was, or left).
  virtual void send(const std::string& peer, std::vector<OutFrame> frames,
                    std::chrono::milliseconds timeout) = 0;

  // The next inbound message, or nullopt after `timeout`.
  virtual std::optional<RawMessage> receive(std::chrono::milliseconds timeout) = 0;

  // Frames still queued when close() runs go out for up to `bound` after
  // it (the end of the ZeroMQ context waits for them; frames towards a peer
  // that is down give up at the bound) instead of being dropped: a LEAVE
  // reaches the peers before the process exits. Until this is called close()
  // drops what is queued, as disconnect() does.
  virtual void flush_on_close(std::chrono::milliseconds bound) = 0;
  virtual void close() = 0;

  virtual ConnectionCounts connection_counts() const { return {}; }

  // Inbound connections past the bound (ZmqTransport): sends `request` (a
  // CLOSE_CONNECTION envelope, this node's) to the members whose connection
  // to this one is the least recently used (InboundConnections says which).
  // Receive thread only; the dispatcher calls it between reads.
  virtual void ask_to_close(const std::string& /*request*/) {}
  virtual void release(const std::string& /*peer*/) {}
  // The segments a modelled network loses (gossipctl simulate's in-process
  // hub); nullptr for a real network, whose losses are its own.
  virtual const ModelledLosses* modelled_losses() const { return nullptr; }
};

}  // namespace gossipd::protocol
