#include "daemon/modes/pipeline/pipeline_comm.h"

#include <spdlog/spdlog.h>

#include <stdexcept>

#include "protocol/collectives/collectives.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {
// Tags: pipeline d's tensors 3d, its collectives 3d + 1 (a tensor stream's
// group takes no collectives); stage k's replica group 3k + 2.
PipelineComm::PipelineComm(protocol::Node& node, const std::vector<std::string>& members,
                           topology::PipelineShape shape, size_t rank, protocol::CollectiveOptions options,
                           protocol::tags::Range range)
    : node_(node), shape_(shape), at_(topology::pipeline_coord(shape, rank)) {
  if (members.size() != shape.procs()) {
    throw std::invalid_argument("a pipeline of " + std::to_string(shape.stages) + " stages x " +
                                std::to_string(shape.replicas) + " replicas needs " +
                                std::to_string(shape.procs()) + " members, got " +
                                std::to_string(members.size()));
  }
  const std::vector<std::string> pipeline =
      protocol::members_at(members, topology::pipeline_ranks(shape, at_.replica));
  pipeline_ = std::make_unique<protocol::Group>(node, range.at(3 * at_.replica), pipeline, options);
  gather_ = std::make_unique<protocol::Group>(node, range.at(3 * at_.replica + 1), pipeline, options);
  replicas_ = std::make_unique<protocol::Group>(
      node, range.at(3 * at_.stage + 2),
      protocol::members_at(members, topology::stage_ranks(shape, at_.stage)), options);
  replicas_levels_ = std::make_unique<protocol::HostAwareCollectives>(
      *replicas_, std::nullopt, [id = node.id(), stage = at_.stage](const std::string& levels) {
        spdlog::info("node '{}': stage {}'s replicas sum in two levels, {}", id, stage, levels);
      });
  stream_ = std::make_unique<protocol::TensorStream>(*pipeline_);
}

void PipelineComm::set_stop(std::stop_token stop) {
  for (protocol::Group* g : {pipeline_.get(), gather_.get(), replicas_.get()}) g->options().stop = stop;
}

PipelineComm::SendHandle PipelineComm::send_activation(uint64_t micro, std::span<const float> data) {
  bytes_.activation += data.size_bytes();
  return stream_->send(at_.stage + 1, 2 * micro, data);
}

void PipelineComm::recv_activation(uint64_t micro, std::span<float> out) {
  stream_->recv(at_.stage - 1, 2 * micro, out);
}

PipelineComm::SendHandle PipelineComm::send_gradient(uint64_t micro, std::span<const float> data) {
  bytes_.input_gradient += data.size_bytes();
  return stream_->send(at_.stage - 1, 2 * micro + 1, data);
}

void PipelineComm::recv_gradient(uint64_t micro, std::span<float> out) {
  stream_->recv(at_.stage + 1, 2 * micro + 1, out);
}

void PipelineComm::wait(const SendHandle& handle) { stream_->wait(handle); }

void PipelineComm::allreduce_replicas(std::span<float> data) {
  if (shape_.replicas == 1) return;
  const uint64_t before = node_.payload_bytes_sent();
  replicas_levels_->allreduce(data);
  bytes_.weight_gradient += node_.payload_bytes_sent() - before;
}

void PipelineComm::reduce_scatter_replicas(std::span<float> data, std::span<const size_t> counts) {
  const uint64_t before = node_.payload_bytes_sent();
  replicas_levels_->reduce_scatter(data, counts);
  bytes_.weight_gradient += node_.payload_bytes_sent() - before;
}

void PipelineComm::allgather_replicas(std::span<float> data, std::span<const size_t> counts) {
  const uint64_t before = node_.payload_bytes_sent();
  replicas_levels_->allgather(data, counts);
  bytes_.weight_gradient += node_.payload_bytes_sent() - before;
}

void PipelineComm::gather_parameters(std::span<float> data, std::span<const size_t> counts) {
  // The last input gradients may still be on their way (more than a
  // shared-memory pipe holds): they go before this thread turns to the gather.
  if (stream_) stream_->flush();
  if (shape_.stages > 1) protocol::Allgather(*gather_, data, counts).run();
}

}  // namespace gossipd::daemon
