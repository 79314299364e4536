#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "protocol/transport/node.h"
#include "topology/split.h"

namespace gossipd::protocol {

class GroupWire;

struct CollectiveOptions {
  // A peer silent for this long fails the call with PeerTimeout.
  std::chrono::milliseconds timeout{10000};
  // Pipeline piece size: big enough to amortise per-message costs, small
  // enough that forwarding one piece overlaps reducing the next.
  size_t chunk_bytes = size_t{512} << 10;
  // Aborts a blocked call (throws Aborted).
  std::stop_token stop;
  // Direct data path: how long a waiting call polls its sockets (yielding
  // the CPU between looks) before it blocks in poll(2) (tests/bench/README.md).
  std::chrono::microseconds spin{200};
};

// [begin, end) in elements; the even split is topology's (grids use it too).
using topology::block_range;
using topology::BlockRange;

// The pieces a collective cuts `count` floats into: whole pieces of
// options.chunk_bytes and one shorter, rounded up; 0 for 0. Every rank
// derives the same number from the same sizes.
size_t piece_count(size_t count, const CollectiveOptions& options);

// The group sizes recursive doubling and the butterfly work on.
inline bool power_of_two(size_t n) { return n > 0 && (n & (n - 1)) == 0; }

// The blocks of a collective over `parts` ranks: block_range's even split,
// or block r of `counts[r]` elements in order (the v-variants). Throws
// ProtocolConfigError naming `what` when counts has the wrong length or
// does not add up to `count`.
std::vector<BlockRange> block_layout(size_t count, size_t parts, std::span<const size_t> counts,
                                     const std::string& what);

// The ids of `ranks` in `members` (a mode's groups: a grid column, a
// pipeline's stages), in the order of `ranks`.
std::vector<std::string> members_at(const std::vector<std::string>& members, std::span<const size_t> ranks);

// An ordered list of members sharing a collective tag. Every member builds the
// same Group (same tag and order) and calls the same collectives in the same
// order; several groups may run at once over one Node if their tags differ.
// One Group is used by one thread at a time.
class Group {
 public:
  // Throws ProtocolConfigError when the node is not in `members` or ids repeat.
  Group(Node& node, uint32_t tag, std::vector<std::string> members, CollectiveOptions options = {});
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  Node& node() const { return node_; }
  uint32_t tag() const { return tag_; }
  size_t size() const { return members_.size(); }
  size_t rank() const { return rank_; }
  const std::vector<std::string>& members() const { return members_; }
  const std::string& member(size_t rank) const { return members_.at(rank % members_.size()); }
  const std::string& left() const { return member(rank_ + size() - 1); }
  const std::string& right() const { return member(rank_ + 1); }
  const CollectiveOptions& options() const { return options_; }
  CollectiveOptions& options() { return options_; }

  // Sequence number of the next collective call; all members advance together.
  uint64_t next_seq() { return next_seq_++; }

  // The direct data path's connections, or nullptr when the node sends
  // payloads over ZeroMQ. Made on first use.
  GroupWire* wire();

 private:
  Node& node_;
  uint32_t tag_;
  std::vector<std::string> members_;
  size_t rank_ = 0;
  CollectiveOptions options_;
  uint64_t next_seq_ = 0;
  std::unique_ptr<GroupWire> wire_;
};

}  // namespace gossipd::protocol
