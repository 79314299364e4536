#pragma once

#include <cstddef>
#include <memory>

#include "daemon/config/run_options.h"
#include "daemon/worker/compress_flags.h"
#include "daemon/worker/robust_flags.h"
#include "daemon/worker/worker.h"
#include "protocol/wire/tags.h"
#include "trainer/model.h"

namespace gossipd::daemon {

// gossipd run's flags of --algo groups (daemon/modes/groups/groups_mode.cc).
struct GroupsFlags {
  size_t compute_groups = 0;  // g; 0: not given
  // --compute-group-order: the members in the order groups take them (N/g
  // consecutive ones a group), comma-separated; empty: ids sorted.
  std::string order;
  // --momentum auto: the explicit momentum is the target less the implicit
  // momentum of the asynchrony (1 - 1/g), never below the floor.
  float target_momentum = 0.9f;
  float momentum_floor = 0.0f;
  // --compress: the group's ring (the gradient's reduce-scatter, the fresh
  // values' allgather) and the shards' pushes and answers in a codec.
  CompressFlags compress{};
  // --group-overlap: each step's push and pull run while the group computes
  // the next (overlapped_exchange.h); the run's last step waits for its own.
  bool overlap = false;
  // --inject-byzantine (what this member pushes to the shards' owners) and
  // --robust clip (each owner centres every push: shard_clip.h).
  RobustFlags robust{};
};

// --algo groups (Omnivore's compute groups, with the parameter server
// sharded over the members, daemon/groups): the members in g groups
// (compute_groups.h). A group's step: its members compute the
// gradient of their shares of the batch, reduce-scatter it over the group's
// ring, push each shard of their slice to its owner, which applies every
// group's gradient as it arrives, take the fresh values it answers with and
// allgather them over the ring. No group waits for another; a group whose
// member dies re-forms as AllReduce-SGD's ring does. One group is
// synchronous SGD. With --compress the ring's collectives, the pushes and
// the answers travel in the codec (protocol::CompressedRing: a group's
// members still take the same values); the shards' seeds and versions stay
// exact.
// `tags`: the compute groups' range (Mode::tags).
std::unique_ptr<Worker> make_groups_worker(WorkerContext& context, const GroupsFlags& flags,
                                           protocol::tags::Range tags);

// Throws UsageError when --compute-groups is missing or does not divide the
// members, or the optimizer is not element-wise (an owner updates a shard,
// not whole layers).
void check_groups(const GroupsFlags& flags, size_t members, const RunOptions& options);

}  // namespace gossipd::daemon
