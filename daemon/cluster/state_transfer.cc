#include "daemon/cluster/state_transfer.h"

#include <zlib.h>

#include <algorithm>
#include <stdexcept>

#include "protocol/errors.h"

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

uint32_t crc_of(const std::vector<float>& a, const std::vector<float>& b) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const auto* v : {&a, &b}) {
    const auto* p = reinterpret_cast<const Bytef*>(v->data());
    size_t left = v->size() * sizeof(float);
    while (left > 0) {  // crc32 takes a uInt length
      const auto n = static_cast<uInt>(std::min<size_t>(left, 1u << 30));
      crc = crc32(crc, p, n);
      p += n;
      left -= n;
    }
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

void seal(ReplicaState& state) {
  state.header.set_format_version(kStateFormatVersion);
  state.header.set_parameter_floats(state.params.size());
  state.header.set_optimizer_state_floats(state.optimizer.size());
  state.header.set_payload_crc32(crc_of(state.params, state.optimizer));
}

void send_state(protocol::Node& node, const std::string& peer, std::shared_ptr<const ReplicaState> state,
                size_t chunk_bytes, std::chrono::milliseconds timeout) {
  proto::Envelope head = node.envelope(proto::STATE_CHUNK);
  head.set_dtype(proto::DTYPE_FLOAT32);
  head.set_count(0);
  *head.mutable_state_header() = state->header;
  node.transport().send(peer, {protocol::envelope_frame(head), protocol::OutFrame::from_string({})}, timeout);
  const size_t per_chunk = std::max<size_t>(1, chunk_bytes / sizeof(float));
  for (uint32_t which : {kStateParams, kStateOptimizer}) {
    const std::vector<float>& buf = which == kStateParams ? state->params : state->optimizer;
    for (size_t off = 0; off < buf.size(); off += per_chunk) {
      const size_t n = std::min(per_chunk, buf.size() - off);
      proto::Envelope e = node.envelope(proto::STATE_CHUNK);
      e.set_dtype(proto::DTYPE_FLOAT32);
      e.set_segment_id(which);
      e.set_offset(off);
      e.set_count(n);
      // Borrowed: `state` stays alive (and unchanged) until ZeroMQ is done.
      node.transport().send(peer,
                            {protocol::envelope_frame(e),
                             protocol::OutFrame::borrowed(buf.data() + off, n * sizeof(float), state)},
                            timeout);
    }
  }
}

ReplicaState receive_state(protocol::Node& node, const std::string& from, size_t param_floats,
                           size_t optimizer_floats, std::chrono::milliseconds idle_timeout,
                           std::stop_token stop) {
  ReplicaState st;
  bool have_header = false;
  size_t received = 0;
  for (;;) {
    auto m = node.mailbox().pop(proto::STATE_CHUNK, Clock::now() + idle_timeout, stop);
    if (!m) {
      if (stop.stop_requested()) throw protocol::Aborted(node.id(), "downloading the state");
      throw StateTransferError("state download from '" + from + "' stalled: nothing for " +
                               std::to_string(idle_timeout.count()) + " ms (is the member still up?)");
    }
    const proto::Envelope& e = m->envelope;
    if (e.sender() != from) continue;  // only the contact's stream counts
    if (e.has_state_header()) {
      st.header = e.state_header();
      if (st.header.format_version() != kStateFormatVersion) {
        throw StateTransferError("state format " + std::to_string(st.header.format_version()) + " from '" +
                                 from + "', this build reads " + std::to_string(kStateFormatVersion) +
                                 ": run the same gossipd version on every worker");
      }
      if (st.header.parameter_floats() != param_floats ||
          st.header.optimizer_state_floats() != optimizer_floats) {
        throw StateTransferError(
            "state from '" + from + "' has " + std::to_string(st.header.parameter_floats()) +
            " parameters and " + std::to_string(st.header.optimizer_state_floats()) +
            " optimizer floats, this worker " + std::to_string(param_floats) + " and " +
            std::to_string(optimizer_floats) + ": use the cluster's --model and --optimizer");
      }
      st.params.assign(param_floats, 0.0f);
      st.optimizer.assign(optimizer_floats, 0.0f);
      have_header = true;
      received = 0;
    } else {
      if (!have_header) continue;  // the tail of an earlier, abandoned stream
      std::vector<float>* buf = e.segment_id() == kStateParams      ? &st.params
                                : e.segment_id() == kStateOptimizer ? &st.optimizer
                                                                    : nullptr;
      if (!buf || e.dtype() != proto::DTYPE_FLOAT32 || e.offset() > buf->size() ||
          e.count() > buf->size() - e.offset()) {
        throw StateTransferError("state chunk from '" + from + "' out of bounds (buffer " +
                                 std::to_string(e.segment_id()) + ", offset " + std::to_string(e.offset()) +
                                 ")");
      }
      const auto bytes = m->bytes();
      std::copy_n(bytes.data(), bytes.size(), reinterpret_cast<std::byte*>(buf->data() + e.offset()));
      received += e.count();
    }
    if (have_header && received == param_floats + optimizer_floats) break;
  }
  if (crc_of(st.params, st.optimizer) != st.header.payload_crc32()) {
    throw StateTransferError("state from '" + from + "' failed its CRC-32 check: the download was corrupted");
  }
  return st;
}

}  // namespace gossipd::daemon
