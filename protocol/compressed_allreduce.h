#pragma once

#include <span>
#include <vector>

#include "protocol/collective_channel.h"
#include "protocol/error_feedback.h"
#include "protocol/group.h"
#include "protocol/ring_collectives.h"

namespace gossipd::protocol {

// Sum over the group in a codec (--compress for AllReduce-SGD): the ring's
// reduce-scatter, each hop sending its partial sum encoded and the receiver
// decoding and adding it; then the owner of each reduced block encodes it
// once, keeps what its encoding decodes to, and the allgather passes those
// bytes on unchanged, so every member decodes the same bytes and ends with
// the same values, bit for bit (the replicas of AllReduce-SGD stay identical).
// Every member encodes each element exactly once per call (its own block in
// the allgather, every other in the reduce-scatter), so `feedback`'s
// residual, by element, carries what this member's encodings rounded off
// into its next call: the sum the group gets is off by the residuals' change,
// not a random walk of roundings (EF-SGD, error_feedback.h). The blocks are
// cut into pieces and pipelined as AllreduceRing does.
//
// `feedback` must not be lossless (Allreduce is the float32 call). On a
// failure (PeerTimeout, PeerLost, Aborted) `data` and the residual are
// partly updated: the caller restores both before it retries.
class CompressedAllreduce {
 public:
  CompressedAllreduce(Group& group, std::span<float> data, ErrorFeedback& feedback);
  void run();

 private:
  size_t block_at(size_t step) const;   // (rank - step) mod size
  EncodedSegment encode(BlockRange p);  // data[p] + its residual, the residual updated
  void reduce_scatter(CollectiveChannel& channel);
  void allgather(CollectiveChannel& channel);

  Group& group_;
  std::span<float> data_;
  ErrorFeedback& feedback_;
  RingLayout layout_;
};

}  // namespace gossipd::protocol
