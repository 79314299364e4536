#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// SWIM's dissemination: what this member has to tell about others (joins,
// suspicions, evictions, refutations), piggybacked on the probes it sends
// anyway. Each update goes out a bounded number of times (the least sent
// first), enough for an epidemic to reach every member with high
// probability: retransmit_limit(n) = 4 x ceil(log10(n + 1)), as memberlist
// does. A newer update about a member replaces the older one.
class UpdateQueue {
 public:
  // Queues `update` (sent 0 times so far), replacing any about the same
  // member (an accusation replaces only an accusation).
  void add(const proto::MemberUpdate& update);
  // The updates for one message: at most `max`, the least sent first (the
  // newest among equals); each counts as sent once, and is forgotten when
  // it has been sent `limit` times.
  std::vector<proto::MemberUpdate> take(size_t max, size_t limit);
  size_t size() const { return queued_.size(); }

 private:
  struct Queued {
    proto::MemberUpdate update;
    size_t sent = 0;
    uint64_t order = 0;  // when it was queued: newer first among equals
  };
  std::map<std::string, Queued> queued_;  // member id (an accusation's: \0 first) -> its update
  uint64_t next_order_ = 0;
};

// How often an update is sent among `members` (memberlist's RetransmitMult 4).
size_t retransmit_limit(size_t members);

}  // namespace gossipd::daemon
