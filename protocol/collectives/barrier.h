#pragma once

#include "protocol/collectives/group.h"

namespace gossipd::protocol {

// Returns once every member has entered the barrier (dissemination barrier:
// ceil(log2 n) rounds of empty messages).
class Barrier {
 public:
  explicit Barrier(Group& group) : group_(group) {}
  void run();

 private:
  Group& group_;
};

}  // namespace gossipd::protocol
