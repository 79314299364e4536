#pragma once

#include <span>

#include "protocol/collectives/group.h"

namespace gossipd::protocol {

// Copies the root's buffer to every rank along the ring, in pieces, so that
// each rank forwards one piece while the next is in flight.
class BroadcastRing {
 public:
  BroadcastRing(Group& group, std::span<float> data, size_t root);
  void run();

 private:
  Group& group_;
  std::span<float> data_;
  size_t root_;
  size_t pieces_ = 1;
};

}  // namespace gossipd::protocol
