#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/modes/sparse/net/sparse_infer.h"
#include "daemon/modes/sparse/sparse_rows.h"
#include "protocol/collectives/group.h"
#include "protocol/collectives/tensor_stream.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

struct RowInferResult {
  std::vector<uint32_t> categories;  // as the serial infer's, on every process
  // With keep_activations: for each category in order, the final nonzeros
  // of this process's neurons (neuron numbers of the whole layer).
  trainer::sparse::SparseInputs activations;
  // Per product: the payload bytes of the rows this process's node counted
  // sending, summed over the blocks (the planner's words x samples x 4),
  // and the samples that went through it (those not yet all zeros).
  std::vector<uint64_t> payload_bytes, samples;
  double seconds = 0;
};

// The challenge's inference with the neurons spread over the members of a
// group (the sparse mode's row-parallel product): each process holds its
// RowShare, loads the input entries it owns, and in every layer sends the
// entries others read and receives those it reads (point-to-point tensors,
// only those entries, for the block's samples); it computes its neurons
// that read only its own entries while the others' are on their way, then
// the rest, all with the serial kernel and each neuron's edges in the serial
// order, so the activations are the serial reference's bit for bit. Samples
// whose activations are all zeros leave the block as in the serial run
// (zeros stay zeros): with every 4th layer's rows every process sends its
// largest output per sample to the others, so all agree which lanes died
// and drop them after that layer, when dropping saves a chunk of lanes. The categories come from every
// process's largest output per sample (an allgather). Every member calls run() with the same inputs and
// options; a member silent for the group's timeout fails it (PeerTimeout, PeerLost), a stop request aborts it
// (Aborted).
class RowInference {
 public:
  // `members` in rank order; this node's rank is its process number in the
  // partition. Tags from the sparse mode's range `tags` (SparseTag).
  RowInference(protocol::Node& node, const std::vector<std::string>& members, RowShare share,
               uint32_t neurons, protocol::CollectiveOptions options, protocol::tags::Range tags);
  ~RowInference();

  RowInferResult run(const trainer::sparse::SparseInputs& inputs,
                     const trainer::sparse::InferOptions& o = {});

 private:
  class Block;

  protocol::Node& node_;
  RowShare share_;
  uint32_t neurons_;
  std::unique_ptr<protocol::Group> rows_, maxima_;
  std::unique_ptr<protocol::TensorStream> stream_;
};

}  // namespace gossipd::daemon
