#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "protocol/collectives/segment_inbox.h"
#include "protocol/wire/codec.h"

namespace gossipd::protocol {

// The sending side of --compress, with error feedback in EF-SGD's form
// (Seide et al. 2014; Karimireddy et al. 2019): each segment is sent as
// C(x + e), and what the codec rounded off, e ← x + e − C(x + e), is carried
// into the next exchange of that segment, so rounding errors do not add up
// over rounds: the replicas' mean drifts by at most half of the last
// residual instead of a random walk. CHOCO-SGD's form was not taken: it keeps
// a public copy of every peer it mixes with, and Crossover's derangements
// draw new peers for every segment and round (a copy of all N replicas per
// member at scale; a skipped message puts the copies out of step).
//
// Lossless (kNone): the payload is x's float32 bytes as they are, no residual.
class ErrorFeedback {
 public:
  explicit ErrorFeedback(CodecSpec spec) : spec_(spec) {}

  const CodecSpec& spec() const { return spec_; }
  // The payload of the parameters x = params[offset, offset + x.size()).
  EncodedSegment encode(size_t offset, std::span<const float> x);
  // `data` (encode's, for the same x) left for at least one peer: carry
  // what it rounded off. Not called when every send failed: then nothing of
  // x + e left, and e stays owed.
  void sent(size_t offset, std::span<const float> x, const EncodedSegment& data);
  // Drops the residuals (a state download or a checkpoint replaced the
  // parameters they were owed against).
  void clear() { residual_.clear(); }
  // The parameters [offset, offset + count) were multiplied by `factor`
  // (push-sum keeping its weights up): what is owed against them is too.
  void scale(size_t offset, size_t count, float factor);

 private:
  std::span<float> residual(size_t offset, size_t count);

  CodecSpec spec_;
  std::vector<float> residual_;  // by parameter offset; grown on first use
};

}  // namespace gossipd::protocol
