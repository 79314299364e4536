// CollectiveChannel's pieces over the group's direct connections (GroupWire):
// sent and received by the calling thread, no hand-off to another thread.
#include <algorithm>
#include <exception>
#include <list>
#include <set>
#include <tuple>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/group_wire.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

using Clock = CollectiveChannel::Clock;

// Which frames a receive of (seq, step, chunk) takes, and which it drops.
struct Rules {
  Rules(uint64_t seq, uint32_t piece_step, uint32_t piece_chunk) : step(piece_step), chunk(piece_chunk) {
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
  uint32_t step, chunk;
  DataLink::Match match, stale;
};

// A frame as the ZeroMQ path's message would be: a compressed piece's count
// is the one its bytes encode (0 when none does: then it does not fit).
Message message_of(InFrame frame) {
  Message m;
  const auto dtype = static_cast<proto::DType>(frame.header.dtype);
  m.envelope.set_step(frame.header.step);
  m.envelope.set_chunk(frame.header.chunk);
  m.envelope.set_dtype(dtype);
  if (frame.header.codec_block != 0) m.envelope.set_codec_block(frame.header.codec_block);
  const std::optional<CodecSpec> spec = spec_of(dtype, frame.header.codec_block);
  m.envelope.set_count(spec ? decoded_count(*spec, frame.header.bytes).value_or(0)
                            : frame.header.bytes / sizeof(float));
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
    while (!posted_.empty()) withdraw(posted_.front());  // their buffers may go with the call
    try {
      wire_.drive([&] { return wire_.all_sent(); }, Clock::now() + group_.options().timeout,
                  what_ + " (flush)");
      // Copies of this call's pieces (duplicates) go now, counted as stale,
      // rather than wait in the inbox for the next call.
      const uint64_t seq = seq_;
      const DataLink::Match none = [](const wire::FrameHeader&) { return false; };
      const DataLink::Match ours = [seq](const wire::FrameHeader& h) {
        return h.kind == wire::FrameKind::kPiece && h.seq <= seq;
      };
      for (size_t r : heard_) wire_.take(r, none, ours);
    } catch (const std::exception&) {
      // The peer is gone or we were stopped: its next call reports it.
    }
  }

  void send(size_t to_rank, uint32_t step, uint32_t chunk, const CollectiveChannel::Piece& piece,
            std::shared_ptr<const void> owner) override {
    wire::FrameHeader h;
    h.kind = wire::FrameKind::kPiece;
    h.dtype = static_cast<uint16_t>(piece.dtype);
    h.codec_block = piece.codec_block;
    h.seq = seq_;
    h.step = step;
    h.chunk = chunk;
    h.bytes = piece.bytes;
    wire_.send(to_rank, h, piece.data, std::move(owner));
  }

  std::optional<Message> next(size_t from_rank, uint32_t step, uint32_t chunk,
                              Clock::time_point deadline) override {
    heard_.insert(from_rank);
    const Rules rules(seq_, step, chunk);
    std::optional<InFrame> frame;
    const bool got =
        wire_.drive([&] { return bool(frame = wire_.take(from_rank, rules.match, rules.stale)); }, deadline,
                    what_, from_rank);
    if (!got) return std::nullopt;
    return message_of(std::move(*frame));
  }

  // Posts the receive now, so the piece lands in dst as it is read even if
  // it comes before next_into() asks for it (none is buffered on the way).
  void expect(size_t from_rank, uint32_t step, uint32_t chunk, std::span<float> dst,
              CollectiveChannel::Fold fold) override {
    posted(from_rank, step, chunk, dst, fold);
  }

  // A piece already here is taken as next() would; otherwise the receive is
  // posted on the link (unless expect() did), so the piece lands in dst as
  // it is read. A post that has started landing is finished, never mixed
  // with another copy of the piece (fault injection duplicates frames).
  Received next_into(size_t from_rank, uint32_t step, uint32_t chunk, std::span<float> dst,
                     CollectiveChannel::Fold fold, Clock::time_point deadline) override {
    heard_.insert(from_rank);
    const Rules rules(seq_, step, chunk);
    Posted* p = find(from_rank, step, chunk);
    struct Withdraw {
      DirectPath& path;
      Posted*& p;
      ~Withdraw() {
        if (p) path.withdraw(*p);
      }
    } withdraw{*this, p};
    std::optional<InFrame> frame;
    const auto take = [&] {
      return !(p && p->post.started) && bool(frame = wire_.take(from_rank, rules.match, rules.stale));
    };
    if (take()) return {false, message_of(std::move(*frame))};
    if (!p) p = &posted(from_rank, step, chunk, dst, fold);
    if (!wire_.drive([&] { return p->post.done || take(); }, deadline, what_, from_rank)) return {};
    if (!frame) return {true, std::nullopt};
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
  // A receive posted on a link: the piece (from, step, chunk) of dst's size.
  struct Posted {
    Posted(size_t from_rank, uint32_t step, uint32_t chunk, uint64_t seq)
        : from(from_rank), rules(seq, step, chunk) {}
    size_t from;
    Rules rules;
    DataLink::Match floats;
    DataLink::Post post;
  };

  Posted* find(size_t from_rank, uint32_t step, uint32_t chunk) {
    const auto key = std::make_tuple(from_rank, step, chunk);
    const auto same = [&](const Posted& p) {
      return std::make_tuple(p.from, p.rules.step, p.rules.chunk) == key;
    };
    const auto it = std::find_if(posted_.begin(), posted_.end(), same);
    return it == posted_.end() ? nullptr : &*it;
  }

  // The receive of (from_rank, step, chunk) posted on its link, once.
  Posted& posted(size_t from_rank, uint32_t step, uint32_t chunk, std::span<float> dst,
                 CollectiveChannel::Fold fold) {
    if (Posted* q = find(from_rank, step, chunk)) return *q;
    Posted& p = posted_.emplace_back(from_rank, step, chunk, seq_);
    p.floats = [&rules = p.rules](const wire::FrameHeader& h) {
      return h.dtype == proto::DTYPE_FLOAT32 && rules.match(h);
    };
    p.post = {&p.floats, reinterpret_cast<std::byte*>(dst.data()), dst.size_bytes(),
              fold == CollectiveChannel::Fold::kAdd};
    wire_.link(from_rank).post(&p.post);
    return p;
  }

  void withdraw(Posted& p) {
    wire_.link(p.from).withdraw(&p.post);
    posted_.remove_if([&](const Posted& q) { return &q == &p; });
  }

  Group& group_;
  GroupWire& wire_;
  uint64_t seq_;
  std::string what_;
  std::list<Posted> posted_;  // stable addresses: the links hold pointers
  std::set<size_t> heard_;    // the ranks this call received from
};

}  // namespace

std::unique_ptr<CollectiveChannel::Path> make_direct_path(Group& group, uint64_t seq,
                                                          const std::string& what) {
  return std::make_unique<DirectPath>(group, seq, what);
}

}  // namespace gossipd::protocol
