#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "daemon/cluster/replica_state.h"
#include "daemon/cluster/state_share.h"
#include "protocol/transport/node.h"

namespace gossipd::daemon {

// A joiner's download of the state in shares from several members at once.
struct DownloadPlan {
  std::vector<uint64_t> segment_lengths;  // the shares' cuts (share_cut_lengths)
  size_t param_floats = 0;
  size_t optimizer_floats = 0;
  uint32_t shares = 1;
  // Members that may send a share, first choices first: share i is asked of
  // donors[i]; a share whose donor goes silent is asked of a member here not
  // yet asked for it and not silent, the one serving the fewest shares.
  std::vector<std::string> donors;
  // A share that gets nothing this long from its donor is asked again of another.
  std::chrono::milliseconds stall{10000};
  // Shares that split no mass (segment_lengths empty): a donor that finished
  // its share holds its snapshot, so a share whose donor has not started
  // (still waiting for its step boundary) is asked of it instead. The
  // download then waits for the first donor's snapshot, not the last one's.
  bool take_over = false;
  // Asks `donor` for share `index` (of `shares`); empty: nobody is asked (a
  // contact sends the whole state unasked).
  std::function<void(const std::string& donor, uint32_t index)> ask;
};

struct Download {
  ReplicaState state;  // share 0's header (push-sum weights from each segment's share), all the floats
  std::vector<std::string> donors;  // who sent each share
  uint32_t reasked = 0;             // shares asked again of another donor
  uint32_t taken_over = 0;          // shares a donor done with its own took over (take_over)
  double ms = 0;                    // from the first ask to the last share checked
  double wait_ms = 0;               // the longest from a share's (last) ask to its header
};

// Receives every share, checking each chunk against its share's bounds and
// each share's header against the sizes asked for and its CRC-32. Throws
// StateTransferError with a one-line reason (mismatch, corruption, or a
// share no member sent), protocol::Aborted on stop.
Download download_state(protocol::Node& node, const DownloadPlan& plan, std::stop_token stop);

}  // namespace gossipd::daemon
