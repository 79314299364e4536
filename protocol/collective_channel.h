#pragma once

#include <map>
#include <span>
#include <string>
#include <tuple>

#include "protocol/group.h"
#include "protocol/send_tracker.h"

namespace gossipd::protocol {

// The messages of one collective call on a group: sends float pieces
// zero-copy, receives the expected piece from a peer or throws PeerTimeout /
// Aborted. Pieces that do not fit the schedule are dropped and counted.
class CollectiveChannel {
 public:
  // Takes the group's next sequence number.
  CollectiveChannel(Group& group, std::string what);
  // Drops whatever is still queued for this call.
  ~CollectiveChannel();
  CollectiveChannel(const CollectiveChannel&) = delete;
  CollectiveChannel& operator=(const CollectiveChannel&) = delete;

  // Queues `data` (not copied; `owner` keeps it busy until sent).
  void send(size_t to_rank, uint32_t step, uint32_t chunk, std::span<const float> data,
            std::shared_ptr<const void> owner);
  // Waits up to the group timeout for the piece (step, chunk) of `count` floats.
  Message recv(size_t from_rank, uint32_t step, uint32_t chunk, size_t count);

  // After a failure: make the transport let go of our zero-copy sends
  // (resetting the peers we sent to) before the caller's buffer can change.
  void release_sends(SendTracker& tracker, std::initializer_list<size_t> to_ranks);
  // Normal end: waits until every send was handed to the kernel.
  void wait_sent(SendTracker& tracker, size_t to_rank);

  uint64_t seq() const { return seq_; }

 private:
  Group& group_;
  std::string what_;
  uint64_t seq_;
  // Pieces that came before their turn (the network reordered them), by
  // (sender rank, step, chunk). Transports keep order; this is for when one
  // does not.
  std::map<std::tuple<size_t, uint32_t, uint32_t>, Message> early_;
};

// dst[i] += src[i]; src is little-endian float32 of any alignment.
void add_floats(float* dst, const std::byte* src, size_t count);

}  // namespace gossipd::protocol
