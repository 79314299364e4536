#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace gossipd::protocol {

// The root of every error gossipd throws on purpose (transport faults here,
// the daemon's own in daemon/), so one handler can tell them from a bug or a
// library's exception; its what() is the one line main prints. Bad arguments
// stay std::invalid_argument (ProtocolConfigError), broken invariants
// std::logic_error (GOSSIPD_ENFORCE).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A recoverable fault between this node and a peer. Carries who saw it and
// about whom, so the daemon can evict the peer or re-form the ring.
class TransportError : public Error {
 public:
  TransportError(std::string node, std::string peer, const std::string& what)
      : Error(what), node_(std::move(node)), peer_(std::move(peer)) {}
  const std::string& node() const { return node_; }
  const std::string& peer() const { return peer_; }

 private:
  std::string node_;
  std::string peer_;
};

// A peer did not deliver (or accept) a message within the timeout.
class PeerTimeout : public TransportError {
 public:
  PeerTimeout(std::string node, std::string peer, std::chrono::milliseconds timeout,
              const std::string& during)
      : TransportError(node, peer,
                       "node '" + node + "': peer '" + peer + "' silent for " +
                           std::to_string(timeout.count()) + " ms during " + during),
        timeout_(timeout) {}
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  std::chrono::milliseconds timeout_;
};

// The peer is not (or no longer) connected: it left the view or was never
// in it. A collective in flight with a member that just left sees this.
class PeerGone : public TransportError {
 public:
  PeerGone(std::string node, std::string peer)
      : TransportError(
            node, peer,
            "node '" + node + "': send to unknown peer '" + peer + "' (not or no longer a member)") {}
};

// The direct connection to a peer broke: it closed or reset it (the process
// died, say) or sent something that is not a frame.
class PeerLost : public TransportError {
 public:
  PeerLost(std::string node, std::string peer, const std::string& during, const std::string& why)
      : TransportError(
            node, peer,
            "node '" + node + "': connection to peer '" + peer + "' lost during " + during + ": " + why) {}
};

// The caller's stop token fired while a call was blocked.
class Aborted : public TransportError {
 public:
  Aborted(std::string node, const std::string& during)
      : TransportError(node, "", "node '" + node + "': aborted during " + during) {}
};

// A group's members found themselves at different rounds (they skipped
// rounds apart, each taking a view change at its own moment); the round's
// result was not taken. `latest`: the furthest of their rounds, which
// every member of the group learns alike.
class RoundsApart : public TransportError {
 public:
  RoundsApart(std::string node, uint64_t round, uint64_t latest)
      : TransportError(node, "",
                       "node '" + node + "': its group was at round " + std::to_string(latest) +
                           " when it was at " + std::to_string(round)),
        latest_(latest) {}
  uint64_t latest() const { return latest_; }

 private:
  uint64_t latest_;
};

// Bad arguments or configuration (bad endpoint, bad key file).
class ProtocolConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// ENFORCE-style invariant check: a broken invariant is a bug, not a peer fault.
#define GOSSIPD_ENFORCE(cond, msg)                                                                 \
  do {                                                                                             \
    if (!(cond)) throw std::logic_error(std::string("invariant failed: ") + #cond + ": " + (msg)); \
  } while (0)

}  // namespace gossipd::protocol
