#pragma once

#include <memory>

#include "daemon/modes/gossip/gossip_worker.h"
#include "daemon/worker/round_traffic.h"

namespace gossipd::daemon {

// What a round of the gossip protocols sends, for gossipctl simulate's time
// model, drawn by the topology functions the protocols call
// (protocol/gossip/crossover.cc, protocol/gossip/push_sum.cc):
//   flat Crossover-SGD: segment s to the member the derangement of (seed,
//     round, s) names, every segment, each member's in segment order;
//   hierarchical: a ring allreduce of the model in each group, each segment
//     from its owner to the owner the derangement over groups names, then
//     the group's share allreduce;
//   SGP: every segment to each exponential-graph out-peer (the weight rides
//     in the envelope); OSGP and --overlap: the same, waited for a round late.
// --pace is not modelled (its notes are small; its waits are the links').
std::unique_ptr<RoundTraffic> gossip_traffic(GossipAlgo algo, const GossipFlags& flags,
                                             TrafficContext context);

}  // namespace gossipd::daemon
