#include "protocol/collectives/data_link.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gossipd::protocol {
namespace {

// Payload still missing beyond this is read straight into its buffer.
constexpr size_t kDirectReadBytes = 16 << 10;
constexpr int kMaxIov = 64;

bool would_block(ssize_t n) { return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR); }

}  // namespace

DataLink::DataLink(std::string peer, uint64_t max_frame_bytes, uint32_t tag)
    : peer_(std::move(peer)),
      max_frame_bytes_(max_frame_bytes),
      tag_(tag),
      staging_(new std::byte[kStagingBytes]) {}

bool DataLink::fail(LinkFailure f) {
  if (!broken_) failure_ = std::move(f);
  broken_ = true;
  return false;
}

void DataLink::queue(const wire::FrameHeader& header, const void* data, std::shared_ptr<const void> owner,
                     Clock::time_point due) {
  insert_out(
      Out{wire::encode(header), static_cast<const std::byte*>(data), header.bytes, std::move(owner), due});
}

void DataLink::insert_out(Out o) {
  // Sorted by due time, stable; never ahead of a frame partly written.
  auto at = std::upper_bound(out_.begin(), out_.end(), o.due,
                             [](Clock::time_point d, const Out& x) { return d < x.due; });
  if (at == out_.begin() && !out_.empty() && out_.front().written > 0) ++at;
  out_.insert(at, std::move(o));
}

DataLink::Clock::time_point DataLink::next_due() const {
  return out_.empty() ? Clock::time_point::max() : out_.front().due;
}

bool DataLink::flush(Clock::time_point now) {
  if (write_shared_) return flush_shared(now);
  while (fd_ && !broken_ && !out_.empty() && out_.front().due <= now) {
    iovec iov[kMaxIov];
    int n = 0;
    for (const Out& o : out_) {
      if (n + 2 > kMaxIov || o.due > now) break;
      size_t skip = o.written;
      if (skip < o.header.size()) {
        iov[n++] = {const_cast<std::byte*>(o.header.data()) + skip, o.header.size() - skip};
        skip = 0;
      } else {
        skip -= o.header.size();
      }
      if (o.bytes > skip) iov[n++] = {const_cast<std::byte*>(o.data) + skip, o.bytes - skip};
      if (o.switches) break;  // what follows goes through the segment
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t sent = ::sendmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (would_block(sent)) return true;
    if (sent <= 0)
      return fail({RejectReason::kTruncated, false, std::string("send: ") + std::strerror(errno)});
    while (sent > 0) {
      Out& o = out_.front();
      const size_t left = o.header.size() + o.bytes - o.written;
      const size_t take = std::min(left, static_cast<size_t>(sent));
      o.written += take;
      sent -= static_cast<ssize_t>(take);
      if (o.written < o.header.size() + o.bytes) continue;
      const bool switches = o.switches;
      out_.pop_front();  // releases the owner
      if (switches) {
        write_shared_ = true;
        return flush_shared(now);
      }
    }
  }
  return !broken_;
}

bool DataLink::read_available(size_t inbox_limit) {
  while (!broken_ && !eof_ && inbox_bytes_ < inbox_limit && !read_shared_) {
    const size_t missing = in_frame_ ? in_frame_->bytes - in_payload_have_ : 0;
    // Straight into place, unless the bytes are to be added (through staging).
    std::byte* target = in_post_ ? (in_post_->add ? nullptr : in_post_->dst) : in_payload_.get();
    if (missing >= kDirectReadBytes && target) {
      const ssize_t n = ::recv(fd_.get(), target + in_payload_have_, missing, MSG_DONTWAIT);
      if (would_block(n)) return true;
      if (n <= 0) return closed(n);
      in_payload_have_ += static_cast<size_t>(n);
      if (in_payload_have_ == in_frame_->bytes) finish_frame();
      if (static_cast<size_t>(n) < missing) return true;  // drained: spare the EAGAIN call
      continue;
    }
    const ssize_t n = ::recv(fd_.get(), staging_.get(), kStagingBytes, MSG_DONTWAIT);
    if (would_block(n)) return true;
    if (n <= 0) return closed(n);
    consume(staging_.get(), static_cast<size_t>(n));  // stops at a switch: the rest are doorbells
    if (static_cast<size_t>(n) < kStagingBytes && !read_shared_) return !broken_;  // drained
  }
  if (read_shared_ && !broken_) return read_shared(inbox_limit);
  return !broken_;
}

bool DataLink::closed(ssize_t n) {
  // A reset is the peer's close too: it left with bytes of ours unread (a
  // doorbell, an answer to its offer); what it sent before is still read.
  if (n == 0 || errno == ECONNRESET) {
    eof_ = true;
    return true;
  }
  return fail({RejectReason::kTruncated, false, std::string("receive: ") + std::strerror(errno)});
}

void DataLink::consume(const std::byte* data, size_t n) {
  while (n > 0 && !broken_) {
    if (!in_frame_) {
      const size_t take = std::min(n, in_header_.size() - in_header_have_);
      std::memcpy(in_header_.data() + in_header_have_, data, take);
      in_header_have_ += take;
      data += take;
      n -= take;
      if (in_header_have_ == in_header_.size()) {
        const bool was_shared = read_shared_;
        if (!begin_payload() || read_shared_ != was_shared) return;
      }
      continue;
    }
    const size_t take = std::min(n, in_frame_->bytes - in_payload_have_);
    if (in_post_) {
      land(data, take);
    } else {
      std::memcpy(in_payload_.get() + in_payload_have_, data, take);
    }
    in_payload_have_ += take;
    data += take;
    n -= take;
    if (in_payload_have_ == in_frame_->bytes) finish_frame();
  }
}

bool DataLink::begin_payload() {
  in_header_have_ = 0;
  auto d = wire::decode(in_header_, max_frame_bytes_);
  if (!d.header) return fail({d.reason, true, d.detail});
  if (d.header->tag != tag_) {
    return fail({RejectReason::kUnexpected, true,
                 "data frame for group " + std::to_string(d.header->tag) + " on a connection of group " +
                     std::to_string(tag_)});
  }
  if (d.header->kind >= wire::FrameKind::kShmOffer) return control_frame(*d.header);
  in_frame_ = d.header;
  in_payload_have_ = 0;
  const auto takes = [&](const Post* p) { return p->bytes == d.header->bytes && (*p->match)(*d.header); };
  if (const auto it = std::find_if(posts_.begin(), posts_.end(), takes); it != posts_.end()) {
    in_post_ = *it;
    in_post_->started = true;
    posts_.erase(it);
  } else {
    in_payload_.reset(new std::byte[std::max<uint64_t>(1, d.header->bytes)]);
  }
  if (d.header->bytes == 0) finish_frame();
  return true;
}

void DataLink::land(const std::byte* data, size_t n) {
  size_t at = in_payload_have_;
  if (!in_post_->add) {
    std::memcpy(in_post_->dst + at, data, n);
    return;
  }
  auto* dst = reinterpret_cast<float*>(in_post_->dst);
  constexpr size_t kF = sizeof(float);
  for (; n > 0 && at % kF != 0; --n, ++at) {  // the rest of a float the last read split
    carry_[at % kF] = *data++;
    if ((at + 1) % kF == 0) add_floats(dst + at / kF, carry_.data(), 1);
  }
  const size_t whole = n / kF;
  add_floats(dst + at / kF, data, whole);
  data += whole * kF;
  at += whole * kF;
  for (n -= whole * kF; n > 0; --n, ++at) carry_[at % kF] = *data++;  // finished by the next read
}

void DataLink::withdraw(Post* p) {
  std::erase(posts_, p);
  if (in_post_ != p) return;
  // Half of a frame is in the caller's buffer, which is going away: read the
  // rest into a buffer of our own and drop the frame.
  in_post_ = nullptr;
  in_payload_.reset(new std::byte[std::max<uint64_t>(1, in_frame_->bytes)]);
  in_discard_ = true;
}

void DataLink::finish_frame() {
  if (in_post_ || in_discard_) {
    if (in_post_) in_post_->done = true;
    in_post_ = nullptr;
    in_discard_ = false;
    in_frame_.reset();
    in_payload_.reset();
    in_payload_have_ = 0;
    return;
  }
  const size_t bytes = in_frame_->bytes;
  if (in_frame_->kind == wire::FrameKind::kShmOffer) {
    take_offer({in_payload_.get(), bytes});
    in_frame_.reset();
    in_payload_.reset();
    in_payload_have_ = 0;
    return;
  }
  std::shared_ptr<const void> owner(in_payload_, in_payload_.get());
  inbox_.push_back(InFrame{*in_frame_, Frame(in_payload_.get(), bytes, std::move(owner))});
  inbox_bytes_ += bytes;
  in_frame_.reset();
  in_payload_.reset();
  in_payload_have_ = 0;
}

std::optional<InFrame> DataLink::take(const Match& match, const Match& stale,
                                      const std::function<void(const wire::FrameHeader&)>& on_stale) {
  for (auto it = inbox_.begin(); it != inbox_.end();) {
    const bool dead = stale(it->header);
    if (!dead && !match(it->header)) {
      ++it;
      continue;
    }
    InFrame f = std::move(*it);
    it = inbox_.erase(it);
    inbox_bytes_ -= f.payload.size();
    if (!dead) return f;
    on_stale(f.header);
  }
  return std::nullopt;
}

void DataLink::drop_queued() {
  if (!out_.empty() && out_.front().written > 0) {
    fd_.reset();
    fail({RejectReason::kTruncated, false, "closed with a frame half sent"});
  }
  out_.clear();
}

}  // namespace gossipd::protocol
