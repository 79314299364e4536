#pragma once

#include <chrono>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/replica_state.h"
#include "daemon/cluster/state_share.h"
#include "proto/gossip.pb.h"
#include "protocol/transport/node.h"
#include "protocol/wire/errors.h"

namespace gossipd::daemon {

// The wire form of a download, one per share of the state (state_share.h;
// the whole state is share 0 of 1): one STATE_CHUNK carrying the header (and
// an empty payload frame), then STATE_CHUNKs of at most `chunk_bytes` each:
// segment_id 0 = parameters, 1 = optimizer state, offset/count in floats of
// the whole state, chunk = the share's index. The header describes the whole
// state; its CRC-32 covers the share's parameter bytes then its optimizer
// bytes.
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

// Streams share `index` (`span` of `state`) to `peer` (who must be a
// connected peer of `node`). Each message waits at most `timeout` for room in
// the peer's queue; throws PeerTimeout when the joiner stops reading, and
// StateTransferError, sending nothing, when `span` is not inside `state`.
void send_state(protocol::Node& node, const std::string& peer, std::shared_ptr<const ReplicaState> state,
                uint32_t index, const ShareSpan& span, size_t chunk_bytes, std::chrono::milliseconds timeout);

}  // namespace gossipd::daemon
