#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "protocol/group.h"
#include "protocol/send_tracker.h"

namespace gossipd::protocol {

// Point-to-point tensors between the members of a group, keyed by
// (group tag, seq): a pipeline stage's activations and gradients, a grid's
// halo rows. A send is zero-copy and completes on its own; a receive takes
// the tensor of its key from its rank whatever order tensors arrive in.
// Over the direct data path when the node has one, else over ZeroMQ. Give
// tensors a group (tag) of their own: collectives on the same tag would
// discard tensors as stale. One thread at a time per stream, as for Group.
class TensorStream {
 public:
  explicit TensorStream(Group& group) : group_(group) {}

  // Completion of a send: done once the kernel holds every byte, after which
  // the buffer may change.
  class SendHandle {
   public:
    bool done() const { return !tracker_ || tracker_->all_idle(); }

   private:
    friend class TensorStream;
    std::shared_ptr<SendTracker> tracker_;
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

  // `data` must stay alive and unchanged until the handle is done.
  SendHandle send(size_t to_rank, uint64_t seq, std::span<const float> data);
  // Waits up to the group timeout: PeerTimeout, PeerLost, Aborted.
  void wait(const SendHandle& handle);

  RecvHandle irecv(size_t from_rank, uint64_t seq, std::span<float> out);
  // Completes the receive if its tensor is here, without waiting.
  bool test(RecvHandle& handle);
  void wait(RecvHandle& handle);
  // irecv + wait.
  void recv(size_t from_rank, uint64_t seq, std::span<float> out);

 private:
  bool complete(RecvHandle& h, std::chrono::steady_clock::time_point deadline);

  Group& group_;
};

}  // namespace gossipd::protocol
