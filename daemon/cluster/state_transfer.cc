#include "daemon/cluster/state_transfer.h"

namespace gossipd::daemon {

void seal(ReplicaState& state) {
  state.header.set_format_version(kStateFormatVersion);
  state.header.set_parameter_floats(state.params.size());
  state.header.set_optimizer_state_floats(state.optimizer.size());
  state.header.set_payload_crc32(
      share_crc(state.params, state.optimizer, whole_state(state.params.size(), state.optimizer.size())));
}

void send_state(protocol::Node& node, const std::string& peer, std::shared_ptr<const ReplicaState> state,
                uint32_t index, const ShareSpan& span, size_t chunk_bytes,
                std::chrono::milliseconds timeout) {
  if (span.param_begin > span.param_end || span.param_end > state->params.size() ||
      span.optimizer_begin > span.optimizer_end || span.optimizer_end > state->optimizer.size()) {
    // The joiner's HELLO said another model's sizes (a join policy refuses
    // that; this guards the memory whatever the policy).
    throw StateTransferError("share " + std::to_string(index) + " asked for parameters [" +
                             std::to_string(span.param_begin) + ", " + std::to_string(span.param_end) +
                             ") and optimizer floats [" + std::to_string(span.optimizer_begin) + ", " +
                             std::to_string(span.optimizer_end) + "), this member holds " +
                             std::to_string(state->params.size()) + " and " +
                             std::to_string(state->optimizer.size()) +
                             ": the joiner must run the cluster's --model, --hidden and --optimizer");
  }
  proto::Envelope head = node.envelope(proto::STATE_CHUNK);
  head.set_dtype(proto::DTYPE_FLOAT32);
  head.set_count(0);
  head.set_chunk(index);
  *head.mutable_state_header() = state->header;
  head.mutable_state_header()->set_payload_crc32(share_crc(state->params, state->optimizer, span));
  node.transport().send(peer, {protocol::envelope_frame(head), protocol::OutFrame::from_string({})}, timeout);
  const size_t per_chunk = std::max<size_t>(1, chunk_bytes / sizeof(float));
  for (uint32_t which : {kStateParams, kStateOptimizer}) {
    const std::vector<float>& buf = which == kStateParams ? state->params : state->optimizer;
    const size_t begin = which == kStateParams ? span.param_begin : span.optimizer_begin;
    const size_t end = which == kStateParams ? span.param_end : span.optimizer_end;
    for (size_t off = begin; off < end; off += per_chunk) {
      const size_t n = std::min(per_chunk, end - off);
      proto::Envelope e = node.envelope(proto::STATE_CHUNK);
      e.set_dtype(proto::DTYPE_FLOAT32);
      e.set_segment_id(which);
      e.set_offset(off);
      e.set_count(n);
      e.set_chunk(index);
      // Borrowed: `state` stays alive (and unchanged) until ZeroMQ is done.
      node.transport().send(peer,
                            {protocol::envelope_frame(e),
                             protocol::OutFrame::borrowed(buf.data() + off, n * sizeof(float), state)},
                            timeout);
    }
  }
}

}  // namespace gossipd::daemon
