#pragma once

#include <span>
#include <vector>

#include "protocol/collectives/collective_channel.h"
#include "protocol/collectives/error_feedback.h"
#include "protocol/collectives/group.h"
#include "protocol/collectives/ring.h"

namespace gossipd::protocol {

// The ring collectives in a codec (--compress: AllReduce-SGD's sums, the
// hierarchical groups' averages, the compute groups' rings). The
// reduce-scatter's hops send their partial sums encoded, the receiver
// decodes and adds; in the allgather the owner of each block encodes it
// once, keeps what its encoding decodes to, and the bytes are passed on
// unchanged, so every member decodes the same bytes and ends with the same
// values, bit for bit. `feedback`'s residual, by element, carries what this
// member's encodings rounded off into its next call (EF-SGD,
// error_feedback.h): in an allreduce each member encodes every element
// exactly once (its own block in the allgather, every other in the
// reduce-scatter). The blocks are cut into pieces and pipelined as the
// float32 rings are.
//
// `feedback` must not be lossless (the float32 rings are ring_collectives.h).
// On a failure (PeerTimeout, PeerLost, Aborted) `data` and the residual are
// partly updated: the caller restores both before it retries.
class CompressedRing {
 public:
  enum class Kind { kAllreduce, kReduceScatter, kAllgather };
  // Blocks as block_layout's (counts: the v-variants'); rank r ends a
  // reduce-scatter holding, and contributes to an allgather, block r.
  CompressedRing(Kind kind, Group& group, std::span<float> data, ErrorFeedback& feedback,
                 std::span<const size_t> counts = {});
  void run();

 private:
  size_t block(size_t k) const;         // (owned - k) mod size: what moves at a step
  EncodedSegment encode(BlockRange p);  // data[p] + its residual, the residual updated
  void reduce_scatter(CollectiveChannel& channel);
  void allgather(CollectiveChannel& channel, uint32_t first_step);

  Kind kind_;
  Group& group_;
  std::span<float> data_;
  ErrorFeedback& feedback_;
  RingLayout layout_;
  size_t owned_ = 0;  // the block this rank reduces, then sends first in the allgather
};

// Sum over the group in the codec, in place; every member ends with the same bits.
class CompressedAllreduce {
 public:
  CompressedAllreduce(Group& group, std::span<float> data, ErrorFeedback& feedback)
      : ring_(CompressedRing::Kind::kAllreduce, group, data, feedback) {}
  void run() { ring_.run(); }

 private:
  CompressedRing ring_;
};

}  // namespace gossipd::protocol
