#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "protocol/collectives/group.h"
#include "protocol/collectives/segment_inbox.h"
#include "protocol/collectives/send_tracker.h"
#include "protocol/wire/codec.h"

namespace gossipd::protocol {

// The messages of one collective call on a group: sends float pieces
// zero-copy, receives the expected piece from a peer or throws PeerTimeout /
// PeerLost / Aborted. Pieces that do not fit the schedule are dropped and
// counted. The pieces take the group's direct data path when the node has
// one (GroupWire), ZeroMQ otherwise; the algorithms cannot tell.
class CollectiveChannel {
 public:
  using Clock = std::chrono::steady_clock;

  // Takes the group's next sequence number.
  CollectiveChannel(Group& group, std::string what);
  // Drops whatever is still queued for this call.
  ~CollectiveChannel();
  CollectiveChannel(const CollectiveChannel&) = delete;
  CollectiveChannel& operator=(const CollectiveChannel&) = delete;

  // Queues `data` (not copied; `owner` keeps it busy until sent).
  void send(size_t to_rank, uint32_t step, uint32_t chunk, std::span<const float> data,
            std::shared_ptr<const void> owner);
  // Waits up to the group timeout for the piece (step, chunk) of `count` floats.
  Message recv(size_t from_rank, uint32_t step, uint32_t chunk, size_t count);

  // A compressed piece (--compress): queued as it is (`data` keeps its bytes).
  void send(size_t to_rank, uint32_t step, uint32_t chunk, const EncodedSegment& data);
  // The piece (step, chunk) of `count` values in `spec`, still encoded (its
  // payload's bytes). One in another codec or of another length is dropped
  // and counted (kCodec, kSizeMismatch), and the wait goes on.
  Message recv(size_t from_rank, uint32_t step, uint32_t chunk, const CodecSpec& spec, size_t count);

  // How a received piece lands in the caller's buffer.
  enum class Fold { kCopy, kAdd };
  // recv() of the piece of dst.size() floats, copied or added into dst. The
  // direct path receives it there as it arrives (no buffer of its own, no
  // second pass): dst must not be read, or be on its way out, until this returns.
  void recv_into(size_t from_rank, uint32_t step, uint32_t chunk, std::span<float> dst, Fold fold);
  // Announces a recv_into() of the same piece, dst and fold to come: the
  // direct path posts it now, so the piece lands in dst even if it arrives
  // first (MPI's irecv before send). dst is the receive's from now on.
  void expect(size_t from_rank, uint32_t step, uint32_t chunk, std::span<float> dst, Fold fold);

  // Waits until the sends holding `slot`'s tokens were handed to the kernel
  // (the buffer may change then); false at the deadline.
  bool wait_slot(SendTracker& tracker, size_t slot, Clock::time_point deadline);
  // After a failure: make the transport let go of our zero-copy sends
  // (resetting the peers we sent to) before the caller's buffer can change.
  void release_sends(SendTracker& tracker, std::span<const size_t> to_ranks);
  void release_sends(SendTracker& tracker, std::initializer_list<size_t> to_ranks) {
    release_sends(tracker, std::span<const size_t>(to_ranks.begin(), to_ranks.size()));
  }
  // Normal end: waits until every send was handed to the kernel.
  void wait_sent(SendTracker& tracker, size_t to_rank);

  uint64_t seq() const { return seq_; }

  // What a piece carries: `count` values of `dtype` (a compressed one's
  // int8 block in codec_block) in `bytes` bytes at `data`.
  struct Piece {
    proto::DType dtype = proto::DTYPE_FLOAT32;
    uint32_t codec_block = 0;
    uint64_t count = 0;
    const std::byte* data = nullptr;
    size_t bytes = 0;
  };

  // How the pieces travel (collective_channel.cc: ZeroMQ; direct_path.cc).
  class Path {
   public:
    virtual ~Path() = default;
    virtual void send(size_t to_rank, uint32_t step, uint32_t chunk, const Piece& piece,
                      std::shared_ptr<const void> owner) = 0;
    // nullopt at the deadline.
    virtual std::optional<Message> next(size_t from_rank, uint32_t step, uint32_t chunk,
                                        Clock::time_point deadline) = 0;
    // Like next(), but a piece of dst.size() floats may be folded into dst
    // on arrival: then `landed` and no message. Default: next().
    struct Received {
      bool landed = false;
      std::optional<Message> msg;
    };
    virtual Received next_into(size_t from_rank, uint32_t step, uint32_t chunk, std::span<float> /*dst*/,
                               Fold /*fold*/, Clock::time_point deadline) {
      return {false, next(from_rank, step, chunk, deadline)};
    }
    // expect(); default: nothing (the piece waits where next() finds it).
    virtual void expect(size_t /*from_rank*/, uint32_t /*step*/, uint32_t /*chunk*/, std::span<float> /*dst*/,
                        Fold /*fold*/) {}
    virtual bool wait_slot(SendTracker& tracker, size_t slot, Clock::time_point deadline) = 0;
    virtual bool wait_all(SendTracker& tracker, Clock::time_point deadline) = 0;
    virtual void release(SendTracker& tracker, std::span<const size_t> to_ranks) = 0;
  };

 private:
  [[noreturn]] void missed(size_t from_rank, uint32_t step) const;      // the timeout or the stop
  bool fits(const Message& msg, size_t from_rank, size_t count) const;  // false: rejected, counted
  bool fits(const Message& msg, size_t from_rank, const CodecSpec& spec, size_t count) const;

  Group& group_;
  std::string what_;
  uint64_t seq_;
  std::unique_ptr<Path> path_;
};

// The direct data path's Path (direct_path.cc).
std::unique_ptr<CollectiveChannel::Path> make_direct_path(Group& group, uint64_t seq,
                                                          const std::string& what);

// Where a COLLECTIVE_CHUNK goes in the receiver's mailbox.
struct ChunkAddress {
  uint32_t tag = 0;
  uint64_t seq = 0;
  uint32_t step = 0;
  uint32_t chunk = 0;
};

// Sends one COLLECTIVE_CHUNK over ZeroMQ: `payload` holds `count` elements
// of `dtype` (int8 blocks of `codec_block` values).
void send_chunk(Node& node, const std::string& peer, const ChunkAddress& at, proto::DType dtype,
                uint64_t count, OutFrame payload, std::chrono::milliseconds timeout,
                uint32_t codec_block = 0);

}  // namespace gossipd::protocol
