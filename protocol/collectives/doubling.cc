#include "protocol/collectives/doubling.h"

#include "protocol/collectives/collective_channel.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {}  // namespace

AllreduceDoubling::AllreduceDoubling(Group& group, std::span<float> data) : group_(group), data_(data) {
  if (!power_of_two(group.size())) {
    throw ProtocolConfigError("recursive doubling needs a power-of-two group, not " +
                              std::to_string(group.size()));
  }
}

void AllreduceDoubling::run() {
  CollectiveChannel channel(group_, "allreduce");
  if (group_.size() == 1 || data_.empty()) return;
  const size_t pieces = piece_count(data_.size(), group_.options());
  SendTracker tracker(1);
  size_t partner = group_.rank();
  try {
    for (uint32_t step = 0; (size_t{1} << step) < group_.size(); ++step) {
      partner = group_.rank() ^ (size_t{1} << step);
      for (size_t j = 0; j < pieces; ++j) {
        const BlockRange p = block_range(data_.size(), pieces, j);
        channel.send(partner, step, static_cast<uint32_t>(j), data_.subspan(p.begin, p.size()),
                     tracker.token(0));
      }
      // Our buffer is on its way to the partner until the kernel has it; the
      // partner's pieces wait in the link's inbox meanwhile.
      if (!channel.wait_slot(tracker, 0, std::chrono::steady_clock::now() + group_.options().timeout)) {
        throw PeerTimeout(group_.node().id(), group_.member(partner), group_.options().timeout,
                          "allreduce (send)");
      }
      for (size_t j = 0; j < pieces; ++j) {
        const BlockRange p = block_range(data_.size(), pieces, j);
        channel.recv_into(partner, step, static_cast<uint32_t>(j), data_.subspan(p.begin, p.size()),
                          CollectiveChannel::Fold::kAdd);
      }
    }
  } catch (...) {
    channel.release_sends(tracker, {partner});
    throw;
  }
}

}  // namespace gossipd::protocol
