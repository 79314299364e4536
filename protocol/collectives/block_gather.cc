#include "protocol/collectives/block_gather.h"

#include <algorithm>
#include <string>
#include <vector>

#include "protocol/collectives/collective_channel.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {

void BlockGather::run(std::span<float> rows) {
  CollectiveChannel channel(group_, "block gather");
  const size_t n = group_.size(), me = group_.rank();
  const BlockRange own = block_range(data_.size(), n, me);
  if (rows.size() != n * own.size())
    throw ProtocolConfigError("block gather: " + std::to_string(rows.size()) + " floats for " +
                              std::to_string(n) + " rows of " + std::to_string(own.size()));
  std::copy_n(data_.begin() + static_cast<std::ptrdiff_t>(own.begin), own.size(),
              rows.begin() + static_cast<std::ptrdiff_t>(me * own.size()));
  if (n == 1 || data_.empty()) return;
  SendTracker tracker(1);
  std::vector<size_t> to;
  try {
    // Each rank starts with the next one: no owner is everyone's first.
    for (size_t k = 1; k < n; ++k) {
      const size_t peer = (me + k) % n;
      const BlockRange b = block_range(data_.size(), n, peer);
      const size_t pieces = piece_count(b.size(), group_.options());
      to.push_back(peer);
      for (size_t j = 0; j < pieces; ++j) {
        const BlockRange p = block_range(b.size(), pieces, j);
        channel.send(peer, 0, static_cast<uint32_t>(j), data_.subspan(b.begin + p.begin, p.size()),
                     tracker.token(0));
      }
    }
    const size_t pieces = piece_count(own.size(), group_.options());
    for (size_t k = 1; k < n; ++k) {
      const size_t from = (me + n - k) % n;
      const std::span<float> row = rows.subspan(from * own.size(), own.size());
      for (size_t j = 0; j < pieces; ++j) {
        const BlockRange p = block_range(own.size(), pieces, j);
        channel.recv_into(from, 0, static_cast<uint32_t>(j), row.subspan(p.begin, p.size()),
                          CollectiveChannel::Fold::kCopy);
      }
    }
    // The caller's buffer may change once we return: our sends must have left.
    channel.wait_sent(tracker, to.back());
  } catch (...) {
    channel.release_sends(tracker, to);
    throw;
  }
}

}  // namespace gossipd::protocol
