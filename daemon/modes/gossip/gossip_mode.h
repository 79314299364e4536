#pragma once

#include <memory>

#include "daemon/modes/gossip/gossip_worker.h"
#include "daemon/worker/mode.h"

namespace gossipd::daemon {

// --algo crossover, sgp and osgp: data parallel, the replicas averaged by
// gossip (daemon/modes/gossip/gossip_worker).
std::unique_ptr<Mode> make_gossip_mode(GossipAlgo algo);

}  // namespace gossipd::daemon
