// DataLink between members on one host: the same frames through a segment
// both map (a pipe each way, protocol/shm/shm_pipe.h) instead of the socket,
// which is kept for doorbells and to see the peer go.
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "protocol/collectives/data_link.h"

namespace gossipd::protocol {
namespace {

constexpr size_t kReadSlice = 64 << 10;  // pipe bytes parsed between inbox-limit checks
constexpr size_t kMaxNameBytes = 255;

}  // namespace

void DataLink::queue_control(wire::FrameKind kind, std::shared_ptr<std::vector<std::byte>> payload) {
  wire::FrameHeader h;
  h.kind = kind;
  h.dtype = proto::DTYPE_UINT8;
  h.tag = tag_;
  h.bytes = payload ? payload->size() : 0;
  const std::byte* data = payload ? payload->data() : nullptr;
  insert_out(Out{wire::encode(h), data, h.bytes, std::move(payload), Clock::time_point::min(), 0,
                 kind == wire::FrameKind::kShmSwitch});
}

void DataLink::offer_shared(std::unique_ptr<ShmMapping> mapping, size_t capacity) {
  shm_ = std::move(mapping);
  offered_ = true;
  shm_out_ = std::make_unique<ShmPipe>(shm_->base(), capacity, true);
  shm_in_ = std::make_unique<ShmPipe>(shm_->base() + ShmPipe::mapping_bytes(capacity), capacity, true);
  const std::string& name = shm_->name();
  auto payload = std::make_shared<std::vector<std::byte>>(sizeof(uint64_t) + name.size());
  const uint64_t c = capacity;
  std::memcpy(payload->data(), &c, sizeof(c));
  std::memcpy(payload->data() + sizeof(c), name.data(), name.size());
  queue_control(wire::FrameKind::kShmOffer, std::move(payload));
}

// The connecting side: map the offered segment and switch, or decline.
void DataLink::take_offer(std::span<const std::byte> payload) {
  const auto refuse = [&](std::optional<LinkFailure> why) {
    if (why) notes_.push_back(std::move(*why));
    queue_control(wire::FrameKind::kShmRefuse);
  };
  if (!may_share_) return refuse(std::nullopt);  // not on one host for us, or sharing is off here
  if (shm_) return refuse(LinkFailure{RejectReason::kUnexpected, true, "a second shared-memory offer"});
  uint64_t capacity = 0;
  std::memcpy(&capacity, payload.data(), sizeof(capacity));  // one host: one byte order
  const std::string name(reinterpret_cast<const char*>(payload.data()) + sizeof(capacity),
                         payload.size() - sizeof(capacity));
  if (capacity < kMinShared || capacity > kMaxShared) {
    return refuse(LinkFailure{RejectReason::kBadBody, true,
                              "shared-memory offer of " + std::to_string(capacity) + "-byte pipes"});
  }
  try {
    shm_ = ShmMapping::open(name, shared_bytes(capacity));
  } catch (const ShmError& e) {
    // No such name any more: the offering side gave the link up already
    // and waits for no answer.
    if (e.code == ENOENT) return;
    return refuse(LinkFailure{RejectReason::kBadBody, true, e.what()});
  } catch (const std::runtime_error& e) {
    return refuse(LinkFailure{RejectReason::kBadBody, true, e.what()});
  }
  shm_in_ = std::make_unique<ShmPipe>(shm_->base(), capacity, false);
  shm_out_ = std::make_unique<ShmPipe>(shm_->base() + ShmPipe::mapping_bytes(capacity), capacity, false);
  queue_control(wire::FrameKind::kShmSwitch);
}

bool DataLink::control_frame(const wire::FrameHeader& h) {
  const auto unexpected = [&](const std::string& what) {
    return fail({RejectReason::kUnexpected, true, what + " on a connection that did not agree to it"});
  };
  if (h.kind == wire::FrameKind::kShmOffer) {
    if (h.bytes <= sizeof(uint64_t) || h.bytes > sizeof(uint64_t) + kMaxNameBytes)
      return fail(
          {RejectReason::kBadBody, true, "shared-memory offer of " + std::to_string(h.bytes) + " bytes"});
    in_frame_ = h;
    in_payload_have_ = 0;
    in_payload_.reset(new std::byte[h.bytes]);
    return true;  // finish_frame() takes it
  }
  if (h.bytes != 0) return fail({RejectReason::kBadBody, true, "a shared-memory switch with a payload"});
  if (h.kind == wire::FrameKind::kShmRefuse) {
    if (!offered_) return unexpected("a shared-memory refusal");
    offered_ = false;
    shm_in_.reset();
    shm_out_.reset();
    shm_.reset();
    return true;
  }
  if (!shm_ || read_shared_) return unexpected("a shared-memory switch");
  read_shared_ = true;
  if (offered_) {  // the peer mapped ours and switched: the name can go, and we switch too
    offered_ = false;
    shm_->unlink();
    queue_control(wire::FrameKind::kShmSwitch);
  }
  return true;
}

void DataLink::ring() {
  // Until our own switch is on the socket the peer still parses frames
  // there: no doorbell then. The switch frame, queued before anything could
  // want one, is what wakes it (it polls the socket too).
  if (!write_shared_) return;
  const std::byte b{1};
  // A full socket already holds doorbells; a gone peer shows on the read side.
  (void)::send(fd_.get(), &b, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool DataLink::flush_shared(Clock::time_point now) {
  bool wrote = false;
  while (!broken_ && !out_.empty() && out_.front().due <= now) {
    Out& o = out_.front();
    const size_t hb = o.header.size();
    if (o.written < hb) {
      const size_t n = shm_out_->write(o.header.data() + o.written, hb - o.written);
      o.written += n;
      wrote |= n > 0;
      if (o.written < hb) break;
    }
    const size_t done = o.written - hb;
    if (o.bytes > done) {
      const size_t n = shm_out_->write(o.data + done, o.bytes - done);
      o.written += n;
      wrote |= n > 0;
      if (o.written < hb + o.bytes) break;
    }
    out_.pop_front();  // releases the owner
  }
  if (wrote && shm_out_->reader_sleeps()) ring();
  return !broken_;
}

bool DataLink::read_shared(size_t inbox_limit) {
  // The socket first: doorbells, and the peer's close (what it wrote to the
  // pipe before closing is there by then, read below).
  while (!eof_ && fd_) {
    const ssize_t n = ::recv(fd_.get(), staging_.get(), kStagingBytes, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    if (!closed(n)) return false;
  }
  bool freed = false;
  while (!broken_ && inbox_bytes_ < inbox_limit) {
    std::span<const std::byte> s;
    try {
      s = shm_in_->readable();
    } catch (const std::runtime_error& e) {
      return fail({RejectReason::kBadBody, true, e.what()});
    }
    if (s.empty()) break;
    const size_t take = std::min(s.size(), kReadSlice);
    consume(s.data(), take);
    shm_in_->consume(take);
    freed = true;
  }
  if (freed && shm_in_->writer_sleeps()) ring();
  return !broken_;
}

bool DataLink::prepare_sleep() {
  bool work = false;
  if (read_shared_ && !eof_) {
    shm_in_->set_reader_sleeps(true);
    try {
      work |= !shm_in_->readable().empty();
    } catch (const std::runtime_error&) {
      work = true;  // the next read says what is wrong
    }
  }
  if (write_shared_ && wants_write()) {
    shm_out_->set_writer_sleeps(true);
    work |= !shm_out_->full();
  }
  return !work;
}

void DataLink::woke() {
  if (shm_in_) shm_in_->set_reader_sleeps(false);
  if (shm_out_) shm_out_->set_writer_sleeps(false);
}

}  // namespace gossipd::protocol
