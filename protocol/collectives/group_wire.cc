#include "protocol/collectives/group_wire.h"

#include <poll.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <stdexcept>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/group.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"

namespace gossipd::protocol {
namespace {

// A wait in poll(2) wakes at least this often to look at the stop token.
constexpr std::chrono::milliseconds kStopCheck{20};
// An announcement not answered within this is sent again (the control
// channel may have lost it under fault injection).
constexpr std::chrono::seconds kReannounce{1};
// How long a group's end waits for its peers to close their ends too.
constexpr std::chrono::seconds kCloseGrace{1};
// Pending connections complete on other threads (the listener's accept,
// the control channel's announcement), which wake no poll(2) of ours: a
// wait looks again after an eighth of the time the oldest has waited,
// kLookFirst to kLookMost. A connection made within 8 ms is seen within
// 1 ms of it, a later one within 1/8 of its time; a member waiting for
// one still starting wakes 100 times a second, not 1,000 (2.8% of a core
// at 1,000 here, each of a cluster's members at its start).
constexpr std::chrono::milliseconds kLookFirst{1};
constexpr std::chrono::milliseconds kLookMost{10};

int millis_until(GroupWire::Clock::time_point t, GroupWire::Clock::time_point now) {
  if (t <= now) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - now).count();
  return static_cast<int>(std::min<long long>(ms, kStopCheck.count()));
}

// Writes all of `bytes` to a fresh non-blocking socket before the deadline.
bool write_all(int fd, std::span<const std::byte> bytes, GroupWire::Clock::time_point deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    pollfd p{fd, POLLOUT, 0};
    const auto now = GroupWire::Clock::now();
    if (now >= deadline) return false;
    ::poll(&p, 1, millis_until(deadline, now));
  }
  return true;
}

// The acceptor's one-byte answer to a Hello: false when it closed instead
// (a stale announcement) or the deadline passed.
bool read_ack(int fd, GroupWire::Clock::time_point deadline) {
  for (;;) {
    std::byte b{};
    const ssize_t n = ::recv(fd, &b, 1, MSG_DONTWAIT);
    if (n == 1) return b == wire::kAck;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
    pollfd p{fd, POLLIN, 0};
    const auto now = GroupWire::Clock::now();
    if (now >= deadline) return false;
    ::poll(&p, 1, millis_until(deadline, now));
  }
}

// A segment to offer, or none when this host cannot give one (a full
// /dev/shm, say): the link keeps its socket, with one warning per node.
std::unique_ptr<ShmMapping> make_segment(Node& node) {
  try {
    return ShmMapping::create(DataLink::shared_bytes(node.options().shared_memory_bytes));
  } catch (const std::runtime_error& e) {
    if (node.first_shm_warning())
      spdlog::warn("{}: no shared memory for members on this host ({}); they talk over sockets", node.id(),
                   e.what());
    return nullptr;
  }
}

}  // namespace

GroupWire::GroupWire(Group& group) : group_(group), links_(group.size()) {}

GroupWire::~GroupWire() {
  DataListener* listener = group_.node().data_listener();  // gone when the node was closed first
  for (const Pending& p : pending_) {
    if (p.nonce && listener) listener->forget(p.nonce);
  }
  close_gracefully();
}

// A socket closed with bytes of the peer's still unread (its answer to our
// shared-memory offer, a doorbell) is reset, and a reset drops what our
// kernel had not yet sent of the frames we wrote. So: say we are done (a
// FIN after our data) and read until the peer says so too, kCloseGrace at
// most, before the links close.
void GroupWire::close_gracefully() {
  std::vector<DataLink*> left;
  for (DataLink* l : open_) {
    if (l->fd() < 0 || l->eof() || l->broken()) continue;
    ::shutdown(l->fd(), SHUT_WR);
    left.push_back(l);
  }
  const auto deadline = Clock::now() + kCloseGrace;
  std::array<std::byte, 4096> sink{};
  const auto drained = [&](DataLink* l) {  // true once the peer's close is read
    for (;;) {
      const ssize_t n = ::recv(l->fd(), sink.data(), sink.size(), MSG_DONTWAIT);
      if (n > 0) continue;
      return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
    }
  };
  std::vector<pollfd> fds;
  while (!left.empty()) {
    std::erase_if(left, drained);
    const auto now = Clock::now();
    if (left.empty() || now >= deadline) return;
    fds.clear();
    for (DataLink* l : left) fds.push_back({l->fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), millis_until(deadline, now));
  }
}

DataListener& GroupWire::listener(size_t rank) {
  DataListener* l = group_.node().data_listener();
  // Node::close() took it away: as over ZeroMQ then, the peer is gone for us.
  if (!l) throw PeerGone(group_.node().id(), group_.member(rank));
  return *l;
}

DataLink& GroupWire::link(size_t rank) {
  rank %= group_.size();
  if (links_[rank]) return *links_[rank];
  const auto now = Clock::now();
  Pending p{rank, 0, now, now};
  if (group_.rank() < rank) p.nonce = listener(rank).expect(group_.member(rank));
  links_[rank] = std::make_unique<DataLink>(
      group_.member(rank), group_.node().options().validation.max_message_bytes, group_.tag());
  // Pending before the announcement: if sending it throws, advance() sends it again.
  pending_.push_back(p);
  if (p.nonce) announce(p);
  return *links_[rank];
}

void GroupWire::announce(const Pending& p) {
  Node& node = group_.node();
  const auto announcement = wire::encode(wire::Announcement{p.nonce, listener(p.rank).port()});
  send_chunk(node, group_.member(p.rank), {tags::first(tags::User::kDataPath), group_.tag()},
             proto::DTYPE_UINT8, announcement.size(),
             OutFrame::copy_of(announcement.data(), announcement.size()), group_.options().timeout);
}

bool GroupWire::advance(Pending& p, Clock::time_point now) {
  Node& node = group_.node();
  Fd fd;
  if (p.nonce) {
    fd = listener(p.rank).take(p.nonce);
    if (!fd && now - p.announced > kReannounce) {  // the control channel may have lost it
      p.announced = now;
      announce(p);
    }
  } else {
    const ChunkKey key{tags::first(tags::User::kDataPath), group_.tag(), group_.member(p.rank)};
    if (auto msg = node.mailbox().pop_chunk(key, now, {})) fd = connect_announced(key.sender, *msg);
  }
  if (!fd) return false;
  DataLink& l = *links_[p.rank];
  l.attach(std::move(fd));
  open_.push_back(&l);
  if (!shares_memory(p.rank)) return true;
  if (!p.nonce) {
    l.allow_shared(true);
  } else if (auto segment = make_segment(node)) {
    l.offer_shared(std::move(segment), node.options().shared_memory_bytes);
  }
  return true;
}

bool GroupWire::shares_memory(size_t rank) const {
  return group_.node().shares_memory_with(group_.member(rank));
}

// Connects as an announcement says; an empty Fd when it is malformed or
// stale (its nonce no longer expected: the acceptor closes instead of acking).
Fd GroupWire::connect_announced(const std::string& peer, const Message& announcement) {
  Node& node = group_.node();
  const auto ann = wire::decode_announcement(announcement.bytes());
  if (!ann) {
    node.reject_log().reject(peer, RejectReason::kBadBody, "malformed data-path announcement");
    return Fd();
  }
  const std::string host = endpoint_host(node.peer_endpoint(peer));
  if (host.empty()) throw PeerGone(node.id(), peer);
  const auto deadline = Clock::now() + group_.options().timeout;
  std::string why;
  Fd fd = connect_tcp(host, ann->port, deadline, &why);
  const wire::Hello hello{node.options().validation.version, ann->nonce, node.options().validation.cluster_id,
                          node.id()};
  if (fd && write_all(fd.get(), wire::encode_hello(hello), deadline) && read_ack(fd.get(), deadline)) {
    tune_data_socket(fd.get(), node.options().data_socket);
    return fd;
  }
  return Fd();
}

void GroupWire::send(size_t rank, wire::FrameHeader header, const void* data,
                     std::shared_ptr<const void> owner) {
  DataLink& l = link(rank);
  header.tag = group_.tag();
  auto due = Clock::time_point::min();
  if (FaultDice* dice = group_.node().fault_dice()) {
    const FaultDice::Roll r = dice->roll(l.peer(), header.bytes + wire::kFrameHeaderBytes);
    if (r.drop) return;
    due = r.due;
    if (r.duplicate) l.queue(header, data, owner, due);
  }
  l.queue(header, data, std::move(owner), due);
  if (l.connected() && !l.flush(Clock::now())) lost(l, "send");
}

void GroupWire::lost(const DataLink& l, const std::string& during) {
  const LinkFailure& f = l.failure();
  if (f.rejected) group_.node().reject_log().reject(l.peer(), f.reason, f.detail);
  throw PeerLost(group_.node().id(), l.peer(), during, f.detail);
}

void GroupWire::progress(Clock::time_point now, const std::string& during) {
  if (!pending_.empty()) std::erase_if(pending_, [&](Pending& p) { return advance(p, now); });
  const size_t limit = group_.node().options().max_queued_bytes;
  for (DataLink* l : open_) {
    if (l->wants_write() && !l->flush(now)) lost(*l, during);
    // After the peer's close too: a pipe may still hold what it wrote before.
    if ((!l->eof() || l->reads_shared()) && !l->read_available(limit)) lost(*l, during);
    for (const LinkFailure& f : l->take_notes())
      group_.node().reject_log().reject(l->peer(), f.reason, f.detail);
  }
}

void GroupWire::wait(Clock::time_point deadline) {
  const auto now = Clock::now();
  const size_t limit = group_.node().options().max_queued_bytes;
  std::vector<pollfd>& fds = fds_;
  fds.clear();
  auto until = pending_.empty() ? deadline : std::min(deadline, now + look_again(now));
  bool work = false;
  for (DataLink* l : open_) {
    // A link on shared memory hears a doorbell on its socket when the peer
    // wrote to or freed room in a pipe we sleep on; its socket never blocks a write.
    work |= !l->prepare_sleep();
    short events = (l->inbox_bytes() < limit || l->reads_shared()) && !l->eof() ? POLLIN : 0;
    if (l->wants_write()) {
      if (l->next_due() <= now && !l->writes_shared()) events |= POLLOUT;
      until = std::min(until, l->next_due());
    }
    fds.push_back({l->fd(), events, 0});
  }
  ::poll(fds.data(), fds.size(), work ? 0 : millis_until(until, now));
  for (DataLink* l : open_) l->woke();
}

GroupWire::Clock::duration GroupWire::look_again(Clock::time_point now) const {
  auto oldest = now;
  for (const Pending& p : pending_) oldest = std::min(oldest, p.since);
  return std::clamp<Clock::duration>((now - oldest) / 8, kLookFirst, kLookMost);
}

bool GroupWire::drive(const std::function<bool()>& done, Clock::time_point deadline,
                      const std::string& during, size_t from_rank) {
  if (done()) return true;  // often so already (a send the kernel took): no system call
  const auto spin_until = Clock::now() + group_.options().spin;
  for (;;) {
    const auto now = Clock::now();
    progress(now, during);
    if (done()) return true;
    if (from_rank != kNoRank) {
      const auto& l = links_[from_rank % group_.size()];
      if (l && l->eof())
        throw PeerLost(group_.node().id(), l->peer(), during, "connection closed by the peer");
    }
    if (group_.options().stop.stop_requested()) throw Aborted(group_.node().id(), during);
    if (now >= deadline) return false;
    // Spinning, give the CPU to whoever is runnable: with more processes
    // than cores the peer we wait for may need this one.
    if (now < spin_until) {
      sched_yield();
    } else {
      wait(deadline);
    }
  }
}

std::optional<InFrame> GroupWire::take(size_t rank, const Match& match, const Match& stale) {
  DataLink& l = link(rank);
  return l.take(match, stale, [&](const wire::FrameHeader& h) {
    group_.node().reject_log().reject(l.peer(), RejectReason::kStale,
                                      "data frame of finished call " + std::to_string(h.seq));
  });
}

size_t GroupWire::shared_links() const {
  size_t n = 0;
  for (const auto& l : links_) n += l && l->writes_shared() && l->reads_shared();
  return n;
}

bool GroupWire::all_sent() const {
  for (const auto& l : links_) {
    if (l && l->wants_write() && !l->broken()) return false;
  }
  return true;
}

void GroupWire::drop_queued(size_t rank) {
  rank %= group_.size();
  if (links_[rank]) links_[rank]->drop_queued();
}

}  // namespace gossipd::protocol
