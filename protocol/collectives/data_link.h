#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "protocol/shm/shm_mapping.h"
#include "protocol/shm/shm_pipe.h"
#include "protocol/transport/data_socket.h"
#include "protocol/wire/data_wire.h"
#include "protocol/wire/message.h"

namespace gossipd::protocol {

// A data frame received whole.
struct InFrame {
  wire::FrameHeader header;
  Frame payload;
};

// Why a link cannot be used any more: the peer closed or reset it, or sent
// something that is not a frame (the stream cannot be resynchronised).
struct LinkFailure {
  RejectReason reason = RejectReason::kTruncated;  // counted when `rejected`
  bool rejected = false;
  std::string detail;
};

// One direct TCP connection to one peer of a group, driven without blocking
// by the thread that owns the group (DataLinks are not thread-safe). Sends
// are zero-copy: a queued frame keeps `owner` until its last byte is in the
// kernel. Frames are written in order of their due time (fault injection
// delays and reorders them; without faults due is "now" and order is FIFO).
class DataLink {
 public:
  using Clock = std::chrono::steady_clock;

  // Not connected yet: frames queue until attach(). Frames must carry `tag`
  // (the group's): anything else breaks the link, counted as kUnexpected.
  DataLink(std::string peer, uint64_t max_frame_bytes, uint32_t tag);

  void attach(Fd fd) { fd_ = std::move(fd); }
  bool connected() const { return bool(fd_); }
  int fd() const { return fd_.get(); }
  const std::string& peer() const { return peer_; }

  void queue(const wire::FrameHeader& header, const void* data, std::shared_ptr<const void> owner,
             Clock::time_point due);
  // Writes what the kernel takes now; false (and failure() set) when broken.
  bool flush(Clock::time_point now);
  bool wants_write() const { return !out_.empty(); }
  // When the first queued frame is due (for a poll timeout); max() when none.
  Clock::time_point next_due() const;

  // Reads what is there (until a read comes back short), or until the inbox
  // holds `inbox_limit` bytes (it may pass it by one read: 64 KiB and a
  // frame); the rest waits in the kernel, and TCP holds the sender back.
  // Whole frames go to inbox() or a posted receive. False when broken (a
  // reset, junk); the peer's orderly close only sets eof(): what it sent
  // before stays to be taken.
  bool read_available(size_t inbox_limit = SIZE_MAX);
  bool eof() const { return eof_; }
  size_t inbox_bytes() const { return inbox_bytes_; }

  // Removes and returns the first received frame `match` accepts, in
  // arrival order; frames `stale` accepts on the way are removed and handed
  // to `on_stale`.
  using Match = std::function<bool(const wire::FrameHeader&)>;
  std::optional<InFrame> take(const Match& match, const Match& stale,
                              const std::function<void(const wire::FrameHeader&)>& on_stale);

  // A receive the caller posts (MPI's posted receive): the next frame
  // `match` accepts whose payload is exactly `bytes` goes into `dst` as it
  // is read — copied, or added as float32 — instead of the inbox; `done` is
  // set when it is all there. Several may be posted: a frame goes to the
  // first (in posting order) that takes it. Withdraw a post before `dst`
  // goes away: a frame half received into it is then read on and dropped.
  struct Post {
    const Match* match = nullptr;
    std::byte* dst = nullptr;
    size_t bytes = 0;
    bool add = false;
    bool started = false;  // a frame is landing: it cannot be taken from elsewhere now
    bool done = false;
  };
  void post(Post* p) { posts_.push_back(p); }
  void withdraw(Post* p);

  // Drops queued frames nobody will wait for (after a failed call). A frame
  // already partly written cannot be taken back: the link is closed then.
  void drop_queued();

  bool broken() const { return broken_; }
  const LinkFailure& failure() const { return failure_; }

  // Shared memory between members on one host (data_link_shm.cc). The
  // accepting side offers a segment (a pipe each way) in a frame after the
  // ones already queued; the connecting side, if allow_shared(), maps it and
  // answers kShmSwitch: its frames go through the segment from then on. The
  // offering side switches when that arrives. Each direction switches on its
  // own, at a frame boundary: what was written to the socket before is read
  // from it first. After the switch the socket carries only doorbells (a
  // byte when the other side sleeps in poll) and the peer's close.
  void offer_shared(std::unique_ptr<ShmMapping> mapping, size_t capacity);
  void allow_shared(bool allow) { may_share_ = allow; }
  bool writes_shared() const { return write_shared_; }
  bool reads_shared() const { return read_shared_; }
  // Before a wait in poll(2): tells the other side we sleep on the pipes we
  // use; false when there is work now (then do not sleep). woke() after.
  bool prepare_sleep();
  void woke();
  // Peers' mistakes the link answered without breaking (a bad offer): for
  // the caller to count.
  std::vector<LinkFailure> take_notes() { return std::exchange(notes_, {}); }

  // The segment's size for pipes of `capacity` bytes.
  static size_t shared_bytes(size_t capacity) { return 2 * ShmPipe::mapping_bytes(capacity); }
  // Capacities an offer may name.
  static constexpr size_t kMinShared = size_t{4} << 10, kMaxShared = size_t{1} << 30;

 private:
  static constexpr size_t kStagingBytes = 64 << 10;  // one read from the socket
  struct Out {
    wire::HeaderBytes header;
    const std::byte* data;
    size_t bytes;
    std::shared_ptr<const void> owner;
    Clock::time_point due;
    size_t written = 0;     // of header + payload
    bool switches = false;  // a kShmSwitch: the frames after it go through the segment
  };
  bool fail(LinkFailure f);
  void insert_out(Out o);
  bool closed(ssize_t n);                         // after recv returned n <= 0
  void consume(const std::byte* data, size_t n);  // staged bytes into header / payload
  bool begin_payload();                           // a header is complete
  void finish_frame();
  void land(const std::byte* data, size_t n);  // payload bytes into the post being received
  // Shared memory (data_link_shm.cc).
  bool flush_shared(Clock::time_point now);
  bool read_shared(size_t inbox_limit);
  bool control_frame(const wire::FrameHeader& h);  // a kShm* header; false: broken
  void take_offer(std::span<const std::byte> payload);
  void queue_control(wire::FrameKind kind, std::shared_ptr<std::vector<std::byte>> payload = nullptr);
  void ring();  // a doorbell byte on the socket

  Fd fd_;
  std::string peer_;
  uint64_t max_frame_bytes_;
  uint32_t tag_;
  std::deque<Out> out_;
  std::deque<InFrame> inbox_;
  size_t inbox_bytes_ = 0;

  // Receive state: a header being filled, then its payload.
  wire::HeaderBytes in_header_{};
  size_t in_header_have_ = 0;
  std::optional<wire::FrameHeader> in_frame_;
  std::shared_ptr<std::byte[]> in_payload_;
  size_t in_payload_have_ = 0;
  std::unique_ptr<std::byte[]> staging_;
  std::vector<Post*> posts_;                      // posted by the caller, not done yet
  Post* in_post_ = nullptr;                       // the frame being received goes there
  bool in_discard_ = false;                       // the frame being received is dropped when whole
  std::array<std::byte, sizeof(float)> carry_{};  // a float split between reads (adding)

  bool broken_ = false;
  bool eof_ = false;
  LinkFailure failure_;

  std::unique_ptr<ShmMapping> shm_;  // the segment, once offered or taken
  std::unique_ptr<ShmPipe> shm_out_, shm_in_;
  bool may_share_ = false;
  bool offered_ = false;  // ours is the segment, not yet answered
  bool write_shared_ = false, read_shared_ = false;
  std::vector<LinkFailure> notes_;
};

}  // namespace gossipd::protocol
