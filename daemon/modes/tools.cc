// The tools registry (declared in daemon/ctl/mode_tools.h).
#include "daemon/ctl/mode_tools.h"
#include "daemon/modes/allreduce/two_level_bench.h"
#include "daemon/modes/grid/grid_plan_command.h"
#include "daemon/modes/groups/tune.h"
#include "daemon/modes/pipeline/pipeline_plan_command.h"
#include "daemon/modes/sparse/sparse_tools.h"

namespace gossipd::daemon {

std::vector<std::unique_ptr<ModeTools>> registered_tools() {
  std::vector<std::unique_ptr<ModeTools>> all;
  all.push_back(make_allreduce_tools());  // bench two-level
  all.push_back(make_groups_tools());     // tune
  all.push_back(make_grid_tools());       // plan grid
  all.push_back(make_pipeline_tools());   // plan pipeline
  all.push_back(make_sparse_tools());     // plan sparse, sparse generate|infer, bench sparse
  return all;
}

}  // namespace gossipd::daemon
