#include "protocol/collectives/broadcast_ring.h"

#include <algorithm>
#include <cstring>

#include "protocol/collectives/collective_channel.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {

BroadcastRing::BroadcastRing(Group& group, std::span<float> data, size_t root)
    : group_(group), data_(data), root_(root) {
  if (root_ >= group_.size()) throw ProtocolConfigError("broadcast: root rank out of range");
  pieces_ = std::max<size_t>(1, piece_count(data_.size(), group_.options()));
}

void BroadcastRing::run() {
  CollectiveChannel channel(group_, "broadcast");
  const size_t n = group_.size();
  if (n == 1 || data_.empty()) return;
  const size_t rank = group_.rank();
  const size_t right = rank + 1;
  const bool forwards = (rank + 1) % n != root_;
  SendTracker tracker(1);
  try {
    for (size_t j = 0; j < pieces_; ++j) {
      const BlockRange p = block_range(data_.size(), pieces_, j);
      auto piece = data_.subspan(p.begin, p.size());
      if (rank != root_) {
        Message msg = channel.recv(rank + n - 1, 0, static_cast<uint32_t>(j), p.size());
        if (!piece.empty()) std::memcpy(piece.data(), msg.payload[0].data(), piece.size_bytes());
      }
      if (forwards) channel.send(right, 0, static_cast<uint32_t>(j), piece, tracker.token(0));
    }
    channel.wait_sent(tracker, right);
  } catch (...) {
    channel.release_sends(tracker, {right});
    throw;
  }
}

}  // namespace gossipd::protocol
