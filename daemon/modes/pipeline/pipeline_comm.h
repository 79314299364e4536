#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/modes/pipeline/pipeline_schedule.h"
#include "protocol/collectives/group.h"
#include "protocol/collectives/tensor_stream.h"
#include "protocol/collectives/two_levels.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

// Payload bytes one pipeline process sent, by what for.
struct PipelineBytes {
  uint64_t activation = 0;       // forward, to the next stage
  uint64_t input_gradient = 0;   // backward, to the previous stage
  uint64_t weight_gradient = 0;  // allreduce over the replicas of this stage
};

// What a pipeline stage sends and receives: activations forward and their
// gradients backward as point-to-point tensors keyed by micro-batch, and its
// gradients summed over the replicas holding the same stage. `members` is
// the cluster in rank order (topology::pipeline_coord places them).
//
// Both directions share one group (one tag, told apart by the key: 2m for
// micro-batch m's activation, 2m + 1 for its gradient): the calling thread
// drives a group's connections while it waits, so with a group per
// direction a stage waiting for a gradient would not push the rest of an
// activation it queued, and its neighbour waiting for that activation would
// wait out the timeout.
class PipelineComm {
 public:
  // The index in the pipeline's tag range a worker's all-member group (its
  // start barrier) may take: no group here uses it.
  static constexpr uint64_t kStartTag = uint64_t{1} << 23;
  // The tags the pipeline needs (Mode::tag_count): a range of 2^24.
  static constexpr uint32_t kTagCount = uint32_t{1} << 24;

  using SendHandle = protocol::TensorStream::SendHandle;

  // `tags`: the pipeline's range (Mode::tags, kTagCount of them).
  PipelineComm(protocol::Node& node, const std::vector<std::string>& members, topology::PipelineShape shape,
               size_t rank, protocol::CollectiveOptions options, protocol::tags::Range tags);

  topology::PipelineShape shape() const { return shape_; }
  topology::PipelineCoord at() const { return at_; }
  bool first() const { return at_.stage == 0; }
  bool last() const { return at_.stage + 1 == shape_.stages; }

  // To the next stage: micro-batch `micro`'s output, which stays unchanged
  // until the handle is done.
  SendHandle send_activation(uint64_t micro, std::span<const float> data);
  // From the previous stage.
  void recv_activation(uint64_t micro, std::span<float> out);
  // To the previous stage: the gradient of micro-batch `micro`'s input.
  SendHandle send_gradient(uint64_t micro, std::span<const float> data);
  // From the next stage.
  void recv_gradient(uint64_t micro, std::span<float> out);
  // Waits until a send is done (the buffer may change).
  void wait(const SendHandle& handle);
  // Sum over the replicas of this stage, in place; nothing with one replica.
  // These three in two levels where the replicas share hosts evenly.
  void allreduce_replicas(std::span<float> data);
  // The same in two halves: afterwards this replica's block (counts[r]
  // floats after block r - 1) holds the sum; then every replica's block
  // to the others.
  void reduce_scatter_replicas(std::span<float> data, std::span<const size_t> counts);
  void allgather_replicas(std::span<float> data, std::span<const size_t> counts);
  // Every stage's block of `data` to the others of its pipeline (block k,
  // `counts[k]` floats, after block k - 1): the whole model's parameters
  // for an evaluation; not counted in bytes().
  void gather_parameters(std::span<float> data, std::span<const size_t> counts);

  // A stop request aborts a transfer in progress (protocol::Aborted).
  void set_stop(std::stop_token stop);
  const PipelineBytes& bytes() const { return bytes_; }

 private:
  protocol::Node& node_;
  topology::PipelineShape shape_;
  topology::PipelineCoord at_;
  std::unique_ptr<protocol::Group> pipeline_, gather_, replicas_;
  std::unique_ptr<protocol::HostAwareCollectives> replicas_levels_;  // in two levels where hosts allow
  std::unique_ptr<protocol::TensorStream> stream_;
  PipelineBytes bytes_;
};

}  // namespace gossipd::daemon
