#pragma once

#include <chrono>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/replica_state.h"
#include "proto/gossip.pb.h"
#include "protocol/errors.h"
#include "protocol/node.h"

namespace gossipd::daemon {

// The wire form of a download: one STATE_CHUNK carrying the header (and an
// empty payload frame), then STATE_CHUNKs of at most `chunk_bytes` each:
// segment_id 0 = parameters, 1 = optimizer state, offset/count in floats. The
// header's CRC-32 covers the parameter bytes then the optimizer bytes.
constexpr uint32_t kStateParams = 0;
constexpr uint32_t kStateOptimizer = 1;
constexpr uint32_t kStateFormatVersion = 1;

// A joiner's state hand-over that failed: the download stalled, was corrupt
// or does not fit this worker, or the contact never admitted the joiner.
class StateTransferError : public protocol::Error {
 public:
  using protocol::Error::Error;
};

// Fills in the header's sizes, format version and checksum.
void seal(ReplicaState& state);

// Streams `state` to `peer` (who must be a connected peer of `node`). Each
// message waits at most `timeout` for room in the peer's queue; throws
// PeerTimeout when the joiner stops reading.
void send_state(protocol::Node& node, const std::string& peer, std::shared_ptr<const ReplicaState> state,
                size_t chunk_bytes, std::chrono::milliseconds timeout);

// Receives one download from `from`, checking every chunk against the header
// and the header against the sizes this worker expects. Throws
// StateTransferError with a one-line reason (mismatch, corruption, or no
// chunk for `idle_timeout`), protocol::Aborted on stop.
ReplicaState receive_state(protocol::Node& node, const std::string& from, size_t param_floats,
                           size_t optimizer_floats, std::chrono::milliseconds idle_timeout,
                           std::stop_token stop);

}  // namespace gossipd::daemon
