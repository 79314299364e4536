#pragma once

#include <cstddef>
#include <memory>

#include "daemon/config/run_options.h"
#include "daemon/worker/worker.h"
#include "trainer/model.h"

namespace gossipd::daemon {

// --algo groups (Omnivore's compute groups, decentralised): the members in
// g groups (topology/compute_groups.h). Inside a group AllReduce-SGD (its
// ring, re-formed as AllReduce-SGD's when a member dies); between groups
// Crossover-SGD on a thread of its own, folded in when it arrives
// (GroupFold), so no group waits for another.
std::unique_ptr<Worker> make_groups_worker(WorkerContext& context);

// Throws UsageError when --compute-groups is missing or does not divide the members.
void check_groups(const RunOptions& options, size_t members, const trainer::Model& model);

}  // namespace gossipd::daemon
