#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "protocol/collectives/group.h"
#include "protocol/collectives/send_tracker.h"

namespace gossipd::protocol {

// Point-to-point tensors between the members of a group, keyed by
// (group tag, seq): a pipeline stage's activations and gradients, a grid's
// halo rows. A send is zero-copy and completes on its own; a receive takes
// the tensor of its key from its rank whatever order tensors arrive in.
// Over the direct data path when the node has one, else over ZeroMQ. Give
// tensors a group (tag) of their own: collectives on the same tag would
// discard tensors as stale. One thread at a time per stream, as for Group.
//
// After share_memory(), tensors between members on one host travel through
// memory they share instead (tensor_stream_shm.cc): a ring each way per
// pair, filled and read in place, no system call while both sides are busy.
class TensorStream {
 public:
  explicit TensorStream(Group& group);
  ~TensorStream();
  TensorStream(const TensorStream&) = delete;
  TensorStream& operator=(const TensorStream&) = delete;

  // Every member calls it at the same point (it exchanges a tensor with
  // every other): each pair that shares memory (Node::shares_memory_with:
  // one host, the direct path on, so no CURVE, no injected faults, shared
  // memory not turned off), maps a
  // shared segment the lower rank makes, of `ring_bytes` each way. Tensors
  // of up to a quarter of that go through it from then on, larger ones as
  // before. Returns how many peers share memory with this one; later calls
  // return it again and exchange nothing. Waits up to the group timeout per
  // peer (PeerTimeout, PeerLost, Aborted).
  static constexpr size_t kDefaultRingBytes = size_t{4} << 20;
  size_t share_memory(size_t ring_bytes = kDefaultRingBytes);

  // Completion of a send: done once the kernel holds every byte, after which
  // the buffer may change.
  class SendHandle {
   public:
    bool done() const { return !tracker_ || tracker_->all_idle(); }

   private:
    friend class TensorStream;
    std::shared_ptr<SendTracker> tracker_;
    std::shared_ptr<const void> keep_;  // send_filled's buffer, when it has one
    size_t to_rank_ = 0;
  };
  // A receive posted with irecv(): completes into its buffer.
  class RecvHandle {
   public:
    bool done() const { return done_; }

   private:
    friend class TensorStream;
    size_t from_rank_ = 0;
    uint64_t seq_ = 0;
    std::span<float> out_;
    bool done_ = false;
  };

  // `data` must stay alive and unchanged until the handle is done. A send
  // goes on by itself as far as the link buffers it (the kernel's socket
  // buffers; a shared-memory pipe, 4 MiB by default); the rest moves while
  // this stream's calls run: wait() or flush() before the thread turns to
  // another group's collectives, or the peer may wait for it forever.
  SendHandle send(size_t to_rank, uint64_t seq, std::span<const float> data);
  // Waits up to the group timeout: PeerTimeout, PeerLost, Aborted.
  void wait(const SendHandle& handle);
  // Every send of this stream handed over to its link, as wait() each.
  void flush();

  RecvHandle irecv(size_t from_rank, uint64_t seq, std::span<float> out);
  // Completes the receive if its tensor is here, without waiting.
  bool test(RecvHandle& handle);
  void wait(RecvHandle& handle);
  // irecv + wait.
  void recv(size_t from_rank, uint64_t seq, std::span<float> out);

  // A send of `floats` that `fill` writes in place: in the shared ring to
  // that rank where there is one (no copy of our own), else into a buffer
  // the send owns.
  SendHandle send_filled(size_t to_rank, uint64_t seq, size_t floats,
                         const std::function<void(float*)>& fill);
  // A receive of `floats` that `use` reads in place (the tensor is gone
  // after it returns). Waits as wait(RecvHandle&).
  void recv_used(size_t from_rank, uint64_t seq, size_t floats, const std::function<void(const float*)>& use);

 private:
  struct Shared;  // tensor_stream_shm.cc
  bool complete(RecvHandle& h, std::chrono::steady_clock::time_point deadline);
  SendHandle send_counted(size_t to_rank, uint64_t seq, std::span<const float> data, bool count);
  bool shared_with(size_t rank, size_t floats) const;
  void send_shared(size_t to_rank, uint64_t seq, size_t floats, const std::function<void(float*)>& fill);
  // False at the deadline.
  bool recv_shared(size_t from_rank, uint64_t seq, size_t floats,
                   const std::function<void(const float*)>& use,
                   std::chrono::steady_clock::time_point deadline);
  [[noreturn]] void timed_out(size_t from_rank, uint64_t seq);

  Group& group_;
  std::unique_ptr<Shared> shared_;
  std::vector<float> in_;  // recv_used's tensor off the shared path
};

}  // namespace gossipd::protocol
