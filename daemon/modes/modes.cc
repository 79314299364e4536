// The registry of modes (declared in daemon/worker/mode_set.h).
#include "daemon/config/cli.h"
#include "daemon/modes/allreduce/allreduce_mode.h"
#include "daemon/modes/gossip/gossip_mode.h"
#include "daemon/modes/grid/grid_mode.h"
#include "daemon/modes/groups/groups_mode.h"
#include "daemon/modes/pipeline/pipeline_mode.h"
#include "daemon/modes/sparse/sparse_mode.h"
#include "daemon/worker/mode_set.h"

namespace gossipd::daemon {

std::vector<std::unique_ptr<Mode>> registered_modes() {
  std::vector<std::unique_ptr<Mode>> all;
  all.push_back(make_allreduce_mode());
  all.push_back(make_gossip_mode(GossipAlgo::kCrossover));
  all.push_back(make_gossip_mode(GossipAlgo::kSgp));
  all.push_back(make_gossip_mode(GossipAlgo::kOsgp));
  all.push_back(make_groups_mode());
  all.push_back(make_grid_mode());
  all.push_back(make_pipeline_mode());
  all.push_back(make_sparse_mode());
  return all;
}

// Declared with ModeSet (daemon/worker/mode_set.h): shared code makes a
// ModeSet without including any mode.
ModeSet::ModeSet() : ModeSet(registered_modes()) {}

}  // namespace gossipd::daemon
