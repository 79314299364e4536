#include "protocol/transport/zmq_transport.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "protocol/transport/lanes.h"
#include "protocol/wire/endpoint.h"
#include "protocol/wire/errors.h"

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
// Connections open on demand and close past --max-connections, so a member
// accepts a stream of them: with ZeroMQ's default listen queue (100), 36
// members on 2 cores with the bound at 16 overflowed it (TcpExtListenOverflows),
// and a dropped SYN is retried after 1 s, late enough to miss a segment's
// deadline (tests/bench/connection_bound.sh). The kernel caps it at somaxconn.
constexpr int kListenBacklog = 1024;

// node id, NUL, nonce, counter (ZmqTransport's comment says why).
constexpr size_t kConnectionSuffix = 9;
// The counters of connections opened for one CLOSE_CONNECTION have the top
// bit set: never the id of a connection of the bound.
constexpr uint64_t kOnceConnection = uint64_t{1} << 31;

std::string connection_id(const std::string& node, uint32_t nonce, uint64_t counter) {
  std::string id = node;
  id.push_back('\0');
  for (int shift = 24; shift >= 0; shift -= 8) id.push_back(static_cast<char>((nonce >> shift) & 0xff));
  for (int shift = 24; shift >= 0; shift -= 8) id.push_back(static_cast<char>((counter >> shift) & 0xff));
  return id;
}

bool has_connection_suffix(const std::string& id) {
  return id.size() > kConnectionSuffix && id[id.size() - kConnectionSuffix] == '\0';
}

// The node id a connection's routing id names; ids without the suffix (a
// client that is not gossipd) are taken as they are, for the validator.
std::string node_of(std::string id) {
  if (has_connection_suffix(id)) id.resize(id.size() - kConnectionSuffix);
  return id;
}

// Whether a routing id is a connection opened for one CLOSE_CONNECTION (the
// top bit of its counter, the suffix's last four bytes).
bool once_connection(const std::string& id) {
  return has_connection_suffix(id) && (static_cast<uint8_t>(id[id.size() - 4]) & 0x80) != 0;
}

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
  if (options_.node_id.size() > kMaxNodeIdBytes) {
    throw ProtocolConfigError("transport: node id '" + options_.node_id.substr(0, 32) +
                              "...' is longer than " + std::to_string(kMaxNodeIdBytes) +
                              " bytes; choose a shorter --id");
  }
  connection_nonce_ = std::random_device{}();
  router_.set(zmq::sockopt::linger, 0);
  router_.set(zmq::sockopt::rcvhwm, options_.recv_hwm);
  router_.set(zmq::sockopt::rcvbuf, kReceiveBufferBytes);
  router_.set(zmq::sockopt::sndbuf, options_.send_buffer_bytes);
  router_.set(zmq::sockopt::backlog, kListenBacklog);
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
  if (options_.max_connections > 0) watch_inbound();
}

void ZmqTransport::watch_inbound() {
  // One monitor per transport (several share a context in tests): named by
  // the transport's address and nonce.
  const std::string name = "inproc://gossipd-inbound-" + std::to_string(reinterpret_cast<uintptr_t>(this)) +
                           "-" + std::to_string(connection_nonce_);
  if (zmq_socket_monitor(router_.handle(), name.c_str(), ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0) {
    throw ProtocolConfigError("transport: cannot monitor '" + options_.listen +
                              "': " + zmq_strerror(zmq_errno()));
  }
  monitor_ = zmq::socket_t(context_, zmq::socket_type::pair);
  monitor_.set(zmq::sockopt::linger, 0);
  monitor_.connect(name);
  inbound_ = std::make_unique<InboundConnections>(static_cast<size_t>(options_.max_connections));
}

// Each event is two frames: 16-bit event, 32-bit value (the descriptor), then
// the endpoint.
void ZmqTransport::drain_monitor() {
  for (;;) {
    zmq::message_t event, address;
    if (!monitor_.recv(event, zmq::recv_flags::dontwait)) return;
    if (event.more()) (void)monitor_.recv(address, zmq::recv_flags::dontwait);
    if (event.size() < 6) continue;
    uint16_t kind = 0;
    int32_t fd = 0;
    std::memcpy(&kind, event.data(), sizeof kind);
    std::memcpy(&fd, static_cast<const char*>(event.data()) + sizeof kind, sizeof fd);
    if (kind == ZMQ_EVENT_ACCEPTED) inbound_->accepted(fd, Clock::now());
    if (kind == ZMQ_EVENT_DISCONNECTED) inbound_->disconnected(fd);
  }
}

ZmqTransport::~ZmqTransport() { close(); }

zmq::socket_t ZmqTransport::make_dealer(const std::string& endpoint, uint64_t counter) {
  zmq::socket_t s(context_, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);  // disconnect() must drop (and release) queued frames
  s.set(zmq::sockopt::routing_id, connection_id(options_.node_id, connection_nonce_, counter));
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
  if (const std::string why = endpoint_problem(endpoint, EndpointUse::kConnect); !why.empty()) {
    throw ProtocolConfigError("transport: cannot connect to '" + endpoint + "': " + why);
  }
  auto p = std::make_shared<Peer>();
  p->endpoint = endpoint;
  std::shared_ptr<Peer> old;
  {
    std::unique_lock lock(peers_mutex_);
    auto& slot = peers_[peer];
    // Connecting again to the same endpoint keeps the socket and its queue.
    if (slot && slot->endpoint == endpoint) return;
    old = std::exchange(slot, std::move(p));
  }
  // A sender may hold the old peer's lock while it opens (and looks at the
  // other peers): never wait for it with peers_mutex_ held.
  if (old) {
    std::lock_guard peer_lock(old->mutex);
    close_socket(*old, 0);
  }
}

void ZmqTransport::open(Peer& p) {
  std::lock_guard lock(open_mutex_);
  if (options_.max_connections > 0 && open_ >= static_cast<uint64_t>(options_.max_connections) &&
      !close_least_recent(p)) {
    ++over_bound_;
  }
  p.socket = make_dealer(p.endpoint, opened_);
  p.connected = true;
  ++open_;
  ++opened_;
}

bool ZmqTransport::close_least_recent(const Peer& p) {
  std::vector<std::pair<int64_t, std::shared_ptr<Peer>>> open;  // (last send, peer)
  {
    std::shared_lock lock(peers_mutex_);
    for (const auto& [id, q] : peers_) {
      if (q.get() != &p && q->connected) open.emplace_back(q->last_send_ns.load(), q);
    }
  }
  std::sort(open.begin(), open.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [last, q] : open) {
    std::unique_lock q_lock(q->mutex, std::try_to_lock);  // a sender is using it: the next one
    if (!q_lock.owns_lock() || !q->connected) continue;
    close_socket(*q, static_cast<int>(options_.close_linger.count()));
    ++closed_lru_;
    return true;
  }
  return false;
}

void ZmqTransport::close_socket(Peer& p, int linger_ms) {
  if (!p.connected) return;
  if (linger_ms > 0) p.socket.set(zmq::sockopt::linger, linger_ms);
  p.socket.close();
  p.connected = false;
  --open_;
}

ConnectionCounts ZmqTransport::connection_counts() const {
  return {open_.load(),
          opened_.load(),
          closed_lru_.load(),
          over_bound_.load(),
          inbound_ ? inbound_->size() : 0,
          close_asked_.load(),
          closed_on_request_.load()};
}

void ZmqTransport::ask_to_close(const std::string& request) {
  if (!inbound_ || closed_) return;
  for (const std::string& node : inbound_->to_close(Clock::now())) {
    if (const auto p = peer_or_null(node)) ask(*p, request);
  }
}

// Over the connection to the member when one is open; else over one opened
// for this message alone and closed at once (flushing): asking never takes a
// slot of the bound, which would close the least recently used and open
// connections elsewhere in turn. A send using the connection now means it is
// not idle: nobody is asked.
void ZmqTransport::ask(Peer& p, const std::string& request) {
  std::unique_lock lock(p.mutex, std::try_to_lock);
  if (!lock.owns_lock()) return;
  ++close_asked_;
  if (p.connected) {
    (void)p.socket.send(zmq::buffer(request), zmq::send_flags::dontwait);
    return;
  }
  zmq::socket_t once = make_dealer(p.endpoint, kOnceConnection | asked_once_++);
  (void)once.send(zmq::buffer(request), zmq::send_flags::dontwait);
  once.set(zmq::sockopt::linger, static_cast<int>(options_.close_linger.count()));
}

// The peer's connection and its control lane's (lanes.h): the peer cannot
// tell which of its inbound connections it asked about.
void ZmqTransport::release(const std::string& peer) {
  for (const std::string& name : {peer, lane_name(Lane::kControl, peer)}) {
    const auto p = peer_or_null(name);
    if (!p) continue;
    // A send using it now makes it the most recently used: it stays, and the
    // peer asks again if it still holds too many.
    std::unique_lock lock(p->mutex, std::try_to_lock);
    if (!lock.owns_lock() || !p->connected) continue;
    close_socket(*p, static_cast<int>(options_.close_linger.count()));
    ++closed_on_request_;
  }
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
  close_socket(*p, 0);
}

void ZmqTransport::reset(const std::string& peer) {
  const auto p = peer_or_null(peer);
  if (!p) return;
  std::lock_guard peer_lock(p->mutex);
  // linger 0: queued frames are freed, releasing their owners; the next
  // send connects again.
  close_socket(*p, 0);
}

std::shared_ptr<ZmqTransport::Peer> ZmqTransport::peer_or_null(const std::string& peer) const {
  std::shared_lock lock(peers_mutex_);
  auto it = peers_.find(peer);
  return it == peers_.end() ? nullptr : it->second;
}

std::shared_ptr<ZmqTransport::Peer> ZmqTransport::find_peer(const std::string& peer) const {
  auto p = peer_or_null(peer);
  if (!p) throw PeerGone(options_.node_id, peer);
  return p;
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
  if (closed_) throw PeerGone(options_.node_id, peer);
  if (!p->connected) open(*p);
  p->last_send_ns = Clock::now().time_since_epoch().count();
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
  zmq::pollitem_t items[2] = {{router_.handle(), 0, ZMQ_POLLIN, 0}, {monitor_.handle(), 0, ZMQ_POLLIN, 0}};
  const int watched = inbound_ ? 2 : 1;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (zmq::poll(items, watched, std::max(left, std::chrono::milliseconds(0))) == 0) return std::nullopt;
    if (items[1].revents & ZMQ_POLLIN) drain_monitor();
    if (items[0].revents & ZMQ_POLLIN) break;
    if (Clock::now() >= deadline) return std::nullopt;
  }
  RawMessage raw;
  zmq::message_t id;
  if (!router_.recv(id, zmq::recv_flags::dontwait)) return std::nullopt;
  const std::string connection = id.to_string();
  raw.peer = node_of(connection);
  bool more = id.more();
  while (more) {
    zmq::message_t part;
    if (!router_.recv(part, zmq::recv_flags::dontwait)) break;
    more = part.more();
    // ZMQ_SRCFD: the descriptor of the connection it came in on (set on the
    // frames read from it, not on the routing id the ROUTER adds).
    if (inbound_ && raw.frames.empty()) {
      inbound_->received(zmq_msg_get(part.handle(), ZMQ_SRCFD), raw.peer, Clock::now(),
                         once_connection(connection));
    }
    auto owned = std::make_shared<zmq::message_t>(std::move(part));
    raw.frames.emplace_back(static_cast<const std::byte*>(owned->data()), owned->size(), owned);
  }
  return raw;
}

void ZmqTransport::close() {
  if (closed_.exchange(true)) return;
  std::map<std::string, std::shared_ptr<Peer>> peers;
  {
    std::unique_lock lock(peers_mutex_);
    peers.swap(peers_);
  }
  for (auto& [id, p] : peers) {
    std::lock_guard peer_lock(p->mutex);
    close_socket(*p, close_linger_ms_);
  }
  if (inbound_) {
    zmq_socket_monitor(router_.handle(), nullptr, 0);
    monitor_.close();
  }
  router_.close();
}

}  // namespace gossipd::protocol
