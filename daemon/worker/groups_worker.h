#pragma once

#include <cstddef>
#include <memory>

#include "daemon/config/run_options.h"
#include "daemon/worker/worker.h"
#include "trainer/model.h"

namespace gossipd::daemon {

// gossipd run's flags of --algo groups (daemon/worker/groups_mode.cc).
struct GroupsFlags {
  size_t compute_groups = 0;  // g; 0: not given
  // --momentum auto: the explicit momentum is the target less the implicit
  // momentum of the asynchrony (1 - 1/g), never below the floor.
  float target_momentum = 0.9f;
  float momentum_floor = 0.0f;
};

// --algo groups (Omnivore's compute groups, decentralised): the members in
// g groups (topology/compute_groups.h). Inside a group AllReduce-SGD (its
// ring, re-formed as AllReduce-SGD's when a member dies); between groups
// Crossover-SGD on a thread of its own, folded in when it arrives
// (GroupFold), so no group waits for another.
std::unique_ptr<Worker> make_groups_worker(WorkerContext& context, const GroupsFlags& flags);

// Throws UsageError when --compute-groups is missing or does not divide the members.
void check_groups(const GroupsFlags& flags, size_t members);

}  // namespace gossipd::daemon
