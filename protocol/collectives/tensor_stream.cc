#include "protocol/collectives/tensor_stream.h"

#include <cstring>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/group_wire.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;

std::string what(const char* op, uint64_t seq) {
  return std::string(op) + " of tensor " + std::to_string(seq);
}

}  // namespace

TensorStream::SendHandle TensorStream::send(size_t to_rank, uint64_t seq, std::span<const float> data) {
  return send_counted(to_rank, seq, data, true);
}

TensorStream::SendHandle TensorStream::send_filled(size_t to_rank, uint64_t seq, size_t floats,
                                                   const std::function<void(float*)>& fill) {
  if (shared_with(to_rank, floats)) {
    group_.node().count_payload_sent(floats * sizeof(float));
    send_shared(to_rank, seq, floats, fill);
    SendHandle h;
    h.to_rank_ = to_rank;
    return h;  // done: the bytes are in the ring
  }
  auto buf = std::make_shared<std::vector<float>>(floats);
  fill(buf->data());
  SendHandle h = send_counted(to_rank, seq, *buf, true);
  h.keep_ = std::move(buf);
  return h;
}

void TensorStream::recv_used(size_t from_rank, uint64_t seq, size_t floats,
                             const std::function<void(const float*)>& use) {
  const auto deadline = Clock::now() + group_.options().timeout;
  if (shared_with(from_rank, floats)) {
    if (!recv_shared(from_rank, seq, floats, use, deadline)) timed_out(from_rank, seq);
    return;
  }
  in_.resize(floats);
  recv(from_rank, seq, in_);
  use(in_.data());
}

TensorStream::SendHandle TensorStream::send_counted(size_t to_rank, uint64_t seq, std::span<const float> data,
                                                    bool count) {
  if (shared_with(to_rank, data.size())) {
    if (count) group_.node().count_payload_sent(data.size_bytes());
    send_shared(to_rank, seq, data.size(),
                [&](float* to) { std::memcpy(to, data.data(), data.size_bytes()); });
    SendHandle h;
    h.to_rank_ = to_rank;
    return h;
  }
  SendHandle h;
  h.tracker_ = std::make_shared<SendTracker>(1);
  h.to_rank_ = to_rank;
  if (count) group_.node().count_payload_sent(data.size_bytes());
  if (GroupWire* w = group_.wire()) {
    wire::FrameHeader f;
    f.kind = wire::FrameKind::kTensor;
    f.dtype = proto::DTYPE_FLOAT32;
    f.seq = seq;
    f.bytes = data.size_bytes();
    w->send(to_rank, f, data.data(), h.tracker_->token(0));
    return h;
  }
  send_chunk(group_.node(), group_.member(to_rank), {group_.tag(), seq}, proto::DTYPE_FLOAT32, data.size(),
             OutFrame::borrowed(data.data(), data.size_bytes(), h.tracker_->token(0)),
             group_.options().timeout);
  return h;
}

void TensorStream::wait(const SendHandle& h) {
  if (h.done()) return;
  const auto deadline = Clock::now() + group_.options().timeout;
  const bool ok = group_.wire() ? group_.wire()->drive([&] { return h.done(); }, deadline, "tensor send")
                                : h.tracker_->wait_all(deadline);
  if (!ok)
    throw PeerTimeout(group_.node().id(), group_.member(h.to_rank_), group_.options().timeout, "tensor send");
}

void TensorStream::flush() {
  GroupWire* wire = group_.wire();
  if (!wire) return;  // ZeroMQ's I/O thread moves them
  const auto deadline = Clock::now() + group_.options().timeout;
  if (!wire->drive([&] { return wire->all_sent(); }, deadline, "tensor send (flush)"))
    throw PeerTimeout(group_.node().id(), group_.member(group_.rank() + 1), group_.options().timeout,
                      "tensor send (flush)");
}

TensorStream::RecvHandle TensorStream::irecv(size_t from_rank, uint64_t seq, std::span<float> out) {
  RecvHandle h;
  h.from_rank_ = from_rank;
  h.seq_ = seq;
  h.out_ = out;
  return h;
}

bool TensorStream::test(RecvHandle& h) { return h.done_ || complete(h, Clock::now()); }

void TensorStream::wait(RecvHandle& h) {
  if (h.done_ || complete(h, Clock::now() + group_.options().timeout)) return;
  timed_out(h.from_rank_, h.seq_);
}

void TensorStream::timed_out(size_t from_rank, uint64_t seq) {
  if (group_.options().stop.stop_requested()) throw Aborted(group_.node().id(), what("receive", seq));
  throw PeerTimeout(group_.node().id(), group_.member(from_rank), group_.options().timeout,
                    what("receive", seq));
}

void TensorStream::recv(size_t from_rank, uint64_t seq, std::span<float> out) {
  RecvHandle h = irecv(from_rank, seq, out);
  wait(h);
}

// Takes the handle's tensor before the deadline; one that is not float32 or
// of the wrong size is dropped and counted, and the wait goes on.
bool TensorStream::complete(RecvHandle& h, Clock::time_point deadline) {
  if (shared_with(h.from_rank_, h.out_.size())) {
    const auto copy = [&](const float* from) { std::memcpy(h.out_.data(), from, h.out_.size_bytes()); };
    return h.done_ = recv_shared(h.from_rank_, h.seq_, h.out_.size(), copy, deadline);
  }
  Node& node = group_.node();
  const std::string& peer = group_.member(h.from_rank_);
  const size_t want = h.out_.size_bytes();
  const auto fits = [&](size_t bytes, uint32_t dtype) {
    if (dtype != proto::DTYPE_FLOAT32) {
      node.reject_log().reject(
          peer, RejectReason::kDType,
          "tensor " + std::to_string(h.seq_) + " of dtype " + std::to_string(dtype) + ", expected float32");
      return false;
    }
    if (bytes == want) return true;
    node.reject_log().reject(peer, RejectReason::kSizeMismatch,
                             "tensor " + std::to_string(h.seq_) + " of " + std::to_string(bytes) +
                                 " bytes, expected " + std::to_string(want));
    return false;
  };
  if (GroupWire* w = group_.wire()) {
    const auto match = [&](const wire::FrameHeader& f) {
      return f.kind == wire::FrameKind::kTensor && f.seq == h.seq_;
    };
    const auto never = [](const wire::FrameHeader&) { return false; };
    std::optional<InFrame> got;
    const auto taken = [&] {
      while ((got = w->take(h.from_rank_, match, never))) {
        if (fits(got->payload.size(), got->header.dtype)) return true;
      }
      return false;
    };
    if (!w->drive(taken, deadline, what("receive", h.seq_), h.from_rank_)) return false;
    std::memcpy(h.out_.data(), got->payload.data(), want);
  } else {
    for (;;) {
      auto msg = node.mailbox().pop_chunk({group_.tag(), h.seq_, peer}, deadline, group_.options().stop);
      if (!msg) return false;
      if (!fits(msg->payload[0].size(), msg->envelope.dtype())) continue;
      std::memcpy(h.out_.data(), msg->payload[0].data(), want);
      break;
    }
  }
  h.done_ = true;
  return true;
}

}  // namespace gossipd::protocol
