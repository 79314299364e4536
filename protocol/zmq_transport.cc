#include "protocol/zmq_transport.h"

#include <algorithm>
#include <cstring>

#include "protocol/errors.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;

// Below this a copy is cheaper than the release-callback bookkeeping.
constexpr size_t kZeroCopyMinBytes = 256;

// Kernel receive buffers: large enough that one wake-up of the I/O thread
// moves a whole pipeline piece (hundreds of KiB to MiB) through the socket.
constexpr int kReceiveBufferBytes = 4 << 20;

// How long a send with a shorter timeout still waits for another sender to
// the same peer: far longer than a send that finds room, far shorter than
// one that waits for it.
constexpr auto kLockGrace = std::chrono::milliseconds(20);

void release_owner(void* /*data*/, void* hint) { delete static_cast<std::shared_ptr<const void>*>(hint); }

zmq::message_t to_zmq(OutFrame& frame) {
  if (frame.size < kZeroCopyMinBytes || !frame.owner) return zmq::message_t(frame.data, frame.size);
  auto* hint = new std::shared_ptr<const void>(std::move(frame.owner));
  // libzmq only reads the bytes; the const_cast is for its C signature.
  return zmq::message_t(const_cast<void*>(frame.data), frame.size, &release_owner, hint);
}

}  // namespace

ZmqTransport::ZmqTransport(zmq::context_t& context, ZmqTransportOptions options)
    : context_(context), options_(std::move(options)), router_(context_, zmq::socket_type::router) {
  if (options_.node_id.empty()) throw ProtocolConfigError("transport: node id must not be empty");
  router_.set(zmq::sockopt::linger, 0);
  router_.set(zmq::sockopt::rcvhwm, options_.recv_hwm);
  router_.set(zmq::sockopt::rcvbuf, kReceiveBufferBytes);
  router_.set(zmq::sockopt::sndbuf, options_.send_buffer_bytes);
  // A restarted peer reconnects with the same id; let it take over its slot.
  router_.set(zmq::sockopt::router_handover, 1);
  if (options_.max_frame_bytes > 0) router_.set(zmq::sockopt::maxmsgsize, options_.max_frame_bytes);
  if (options_.curve) {
    router_.set(zmq::sockopt::curve_server, 1);
    router_.set(zmq::sockopt::curve_secretkey, options_.curve->own.secret_key);
    router_.set(zmq::sockopt::zap_domain, std::string(kZapDomain));
  }
  try {
    router_.bind(options_.listen);
  } catch (const zmq::error_t& e) {
    throw ProtocolConfigError("transport: cannot bind '" + options_.listen + "': " + e.what());
  }
  endpoint_ = router_.get(zmq::sockopt::last_endpoint);
}

ZmqTransport::~ZmqTransport() { close(); }

zmq::socket_t ZmqTransport::make_dealer(const std::string& endpoint) {
  zmq::socket_t s(context_, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);  // disconnect() must drop (and release) queued frames
  s.set(zmq::sockopt::routing_id, options_.node_id);
  s.set(zmq::sockopt::sndhwm, options_.send_hwm);
  s.set(zmq::sockopt::sndbuf, options_.send_buffer_bytes);
  s.set(zmq::sockopt::rcvbuf, kReceiveBufferBytes);
  if (options_.curve) {
    s.set(zmq::sockopt::curve_serverkey, options_.curve->server_public_key);
    s.set(zmq::sockopt::curve_publickey, options_.curve->own.public_key);
    s.set(zmq::sockopt::curve_secretkey, options_.curve->own.secret_key);
  }
  try {
    s.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw ProtocolConfigError("transport: cannot connect to '" + endpoint + "': " + e.what());
  }
  return s;
}

void ZmqTransport::connect(const std::string& peer, const std::string& endpoint) {
  {
    // Connecting again to the same endpoint keeps the socket and its queue.
    std::shared_lock lock(peers_mutex_);
    auto it = peers_.find(peer);
    if (it != peers_.end() && it->second->endpoint == endpoint) return;
  }
  auto p = std::make_shared<Peer>();
  p->endpoint = endpoint;
  p->socket = make_dealer(endpoint);
  std::unique_lock lock(peers_mutex_);
  auto& slot = peers_[peer];
  if (slot) {
    std::lock_guard peer_lock(slot->mutex);
    slot->socket.close();
  }
  slot = std::move(p);
}

void ZmqTransport::disconnect(const std::string& peer) {
  std::shared_ptr<Peer> p;
  {
    std::unique_lock lock(peers_mutex_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) return;
    p = it->second;
    peers_.erase(it);
  }
  std::lock_guard peer_lock(p->mutex);
  p->socket.close();
}

void ZmqTransport::reset(const std::string& peer) {
  std::shared_ptr<Peer> p;
  {
    std::shared_lock lock(peers_mutex_);
    auto it = peers_.find(peer);
    if (it == peers_.end()) return;
    p = it->second;
  }
  std::lock_guard peer_lock(p->mutex);
  if (closed_) return;
  p->socket.close();  // linger 0: queued frames are freed, releasing their owners
  p->socket = make_dealer(p->endpoint);
}

std::shared_ptr<ZmqTransport::Peer> ZmqTransport::find_peer(const std::string& peer) const {
  std::shared_lock lock(peers_mutex_);
  auto it = peers_.find(peer);
  if (it == peers_.end()) {
    throw PeerGone(options_.node_id, peer);
  }
  return it->second;
}

void ZmqTransport::send(const std::string& peer, std::vector<OutFrame> frames,
                        std::chrono::milliseconds timeout) {
  GOSSIPD_ENFORCE(!frames.empty(), "a message has at least the envelope frame");
  auto p = find_peer(peer);
  std::vector<zmq::message_t> parts;
  parts.reserve(frames.size());
  for (auto& f : frames) parts.push_back(to_zmq(f));

  const auto deadline = Clock::now() + timeout;
  // Another sender may hold the socket while it waits for room in this
  // peer's queue: this one waits for it no longer than its own timeout (a
  // moment for a timeout of 0), so a heartbeat never stalls behind a segment.
  std::unique_lock lock(p->mutex, std::max(deadline, Clock::now() + kLockGrace));
  if (!lock.owns_lock()) throw PeerTimeout(options_.node_id, peer, timeout, "send");
  if (!p->socket) throw TransportError(options_.node_id, peer, "send to disconnected peer '" + peer + "'");
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto flags =
        zmq::send_flags::dontwait | (i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    // Parts after the first never block (multipart is atomic), so the
    // timeout effectively applies to the peer's queue having room.
    while (!p->socket.send(parts[i], flags)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) throw PeerTimeout(options_.node_id, peer, timeout, "send");
      zmq::pollitem_t item{p->socket.handle(), 0, ZMQ_POLLOUT, 0};
      zmq::poll(&item, 1, std::min(left, std::chrono::milliseconds(100)));
    }
  }
}

std::optional<RawMessage> ZmqTransport::receive(std::chrono::milliseconds timeout) {
  if (closed_) return std::nullopt;
  zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0) return std::nullopt;
  RawMessage raw;
  zmq::message_t id;
  if (!router_.recv(id, zmq::recv_flags::dontwait)) return std::nullopt;
  raw.peer = id.to_string();
  bool more = id.more();
  while (more) {
    zmq::message_t part;
    if (!router_.recv(part, zmq::recv_flags::dontwait)) break;
    more = part.more();
    auto owned = std::make_shared<zmq::message_t>(std::move(part));
    raw.frames.emplace_back(static_cast<const std::byte*>(owned->data()), owned->size(), owned);
  }
  return raw;
}

void ZmqTransport::close() {
  if (closed_.exchange(true)) return;
  std::unique_lock lock(peers_mutex_);
  for (auto& [id, p] : peers_) {
    std::lock_guard peer_lock(p->mutex);
    if (close_linger_ms_ > 0) p->socket.set(zmq::sockopt::linger, close_linger_ms_.load());
    p->socket.close();
  }
  peers_.clear();
  router_.close();
}

}  // namespace gossipd::protocol
