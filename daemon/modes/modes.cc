#include "daemon/worker/modes.h"

#include "daemon/config/cli.h"
#include "daemon/worker/allreduce_mode.h"
#include "daemon/worker/gossip_mode.h"
#include "daemon/worker/grid_mode.h"
#include "daemon/worker/groups_mode.h"
#include "daemon/worker/pipeline_mode.h"
#include "daemon/worker/sparse_mode.h"

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

ModeSet::ModeSet() : modes_(registered_modes()) {}

Mode& ModeSet::find(std::string_view name) {
  for (const auto& m : modes_) {
    if (m->name() == name) return *m;
  }
  std::string names;
  for (const auto& m : modes_) names += (names.empty() ? "" : ", ") + m->name();
  throw UsageError("--algo " + std::string(name) + " is not a mode; the modes are " + names);
}

const Mode& ModeSet::find(std::string_view name) const { return const_cast<ModeSet*>(this)->find(name); }

std::vector<std::string> ModeSet::names() const {
  std::vector<std::string> names;
  for (const auto& m : modes_) names.push_back(m->name());
  return names;
}

void ModeSet::add_flags(ModeFlags& flags) {
  for (const auto& m : modes_) {
    flags.set_owner(m->name());
    m->add_flags(flags);
  }
}

}  // namespace gossipd::daemon
