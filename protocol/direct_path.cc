// CollectiveChannel's pieces over the group's direct connections (GroupWire):
// sent and received by the calling thread, no hand-off to another thread.
#include <exception>

#include "protocol/collective_channel.h"
#include "protocol/errors.h"
#include "protocol/group_wire.h"

namespace gossipd::protocol {
namespace {

using Clock = CollectiveChannel::Clock;

// Which frames a receive of (seq, step, chunk) takes, and which it drops.
struct Rules {
  Rules(uint64_t seq, uint32_t step, uint32_t chunk) {
    const auto key = std::make_pair(step, chunk);
    match = [seq, key](const wire::FrameHeader& h) {
      return h.kind == wire::FrameKind::kPiece && h.seq == seq && std::make_pair(h.step, h.chunk) == key;
    };
    // Calls finish in order and a peer's pieces of one call are taken in
    // order: anything before the current piece is a stale or duplicate copy.
    stale = [seq, key](const wire::FrameHeader& h) {
      return h.kind == wire::FrameKind::kPiece &&
             (h.seq < seq || (h.seq == seq && std::make_pair(h.step, h.chunk) < key));
    };
  }
  DataLink::Match match, stale;
};

Message message_of(InFrame frame) {
  Message m;
  m.envelope.set_step(frame.header.step);
  m.envelope.set_chunk(frame.header.chunk);
  m.envelope.set_count(frame.header.bytes / sizeof(float));
  m.envelope.set_dtype(static_cast<proto::DType>(frame.header.dtype));
  m.payload.push_back(std::move(frame.payload));
  return m;
}

class DirectPath : public CollectiveChannel::Path {
 public:
  DirectPath(Group& group, uint64_t seq, std::string what)
      : group_(group), wire_(*group.wire()), seq_(seq), what_(std::move(what)) {}

  // A call may end with frames still queued (a barrier does not wait for its
  // sends): they are written before the call returns, as ZeroMQ would
  // deliver them after. Frames of a failed call were dropped by release().
  ~DirectPath() override {
    try {
      wire_.drive([&] { return wire_.all_sent(); }, Clock::now() + group_.options().timeout,
                  what_ + " (flush)");
    } catch (const std::exception&) {
      // The peer is gone or we were stopped: its next call reports it.
    }
  }

  void send(size_t to_rank, uint32_t step, uint32_t chunk, std::span<const float> data,
            std::shared_ptr<const void> owner) override {
    wire::FrameHeader h;
    h.kind = wire::FrameKind::kPiece;
    h.dtype = proto::DTYPE_FLOAT32;
    h.seq = seq_;
    h.step = step;
    h.chunk = chunk;
    h.bytes = data.size_bytes();
    wire_.send(to_rank, h, data.data(), std::move(owner));
  }

  std::optional<Message> next(size_t from_rank, uint32_t step, uint32_t chunk,
                              Clock::time_point deadline) override {
    const Rules rules(seq_, step, chunk);
    std::optional<InFrame> frame;
    const bool got =
        wire_.drive([&] { return bool(frame = wire_.take(from_rank, rules.match, rules.stale)); }, deadline,
                    what_, from_rank);
    if (!got) return std::nullopt;
    return message_of(std::move(*frame));
  }

  // A piece already here is taken as next() would; otherwise the receive is
  // posted on the link, so the piece lands in dst as it is read.
  Received next_into(size_t from_rank, uint32_t step, uint32_t chunk, std::span<float> dst,
                     CollectiveChannel::Fold fold, Clock::time_point deadline) override {
    const Rules rules(seq_, step, chunk);
    if (auto frame = wire_.take(from_rank, rules.match, rules.stale))
      return {false, message_of(std::move(*frame))};
    const DataLink::Match floats = [&](const wire::FrameHeader& h) {
      return h.dtype == proto::DTYPE_FLOAT32 && rules.match(h);
    };
    DataLink& link = wire_.link(from_rank);
    DataLink::Post post{&floats, reinterpret_cast<std::byte*>(dst.data()), dst.size_bytes(),
                        fold == CollectiveChannel::Fold::kAdd};
    link.post(&post);
    struct Withdraw {
      DataLink& link;
      ~Withdraw() { link.withdraw(); }
    } withdraw{link};
    std::optional<InFrame> frame;
    const bool got = wire_.drive(
        [&] { return post.done || bool(frame = wire_.take(from_rank, rules.match, rules.stale)); }, deadline,
        what_, from_rank);
    if (!got) return {};
    if (post.done) return {true, std::nullopt};
    return {false, message_of(std::move(*frame))};
  }

  bool wait_slot(SendTracker& tracker, size_t slot, Clock::time_point deadline) override {
    return wire_.drive([&] { return tracker.idle(slot); }, deadline, what_ + " (send)");
  }

  bool wait_all(SendTracker& tracker, Clock::time_point deadline) override {
    return wire_.drive([&] { return tracker.all_idle(); }, deadline, what_ + " (final send)");
  }

  // What is queued is ours: dropping it releases the owners at once.
  void release(SendTracker&, std::span<const size_t> to_ranks) override {
    for (size_t r : to_ranks) wire_.drop_queued(r);
  }

 private:
  Group& group_;
  GroupWire& wire_;
  uint64_t seq_;
  std::string what_;
};

}  // namespace

std::unique_ptr<CollectiveChannel::Path> make_direct_path(Group& group, uint64_t seq,
                                                          const std::string& what) {
  return std::make_unique<DirectPath>(group, seq, what);
}

}  // namespace gossipd::protocol
