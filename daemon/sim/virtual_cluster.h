#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

namespace gossipd::protocol {
class ModelledLosses;
}

namespace gossipd::daemon {

// How a virtual cluster's run ended.
struct VirtualRun {
  std::string failure;   // "" when every member ended by itself; else the first failure, "w3: ..."
  bool stopped = false;  // the caller's stop ended it
};

// The slowest member's round and epoch, about twice a second while they run.
using VirtualProgress = std::function<void(uint64_t round, uint32_t epoch)>;

// N members of gossipd run in this process, one per entry of `args` (gossipd
// run's flags, --listen and --peers naming inproc-hub:// endpoints), talking
// over one in-process hub instead of sockets: the members, modes, protocols,
// trainers and arithmetic are gossipd run's own. Each runs on its own thread
// until all have ended; the first that fails stops the others. Bad flags
// throw UsageError before any member starts.
// `losses`: the gossip segments the modelled network loses, which the
// members skip (none when null).
VirtualRun run_virtual_cluster(const std::vector<std::vector<std::string>>& args, std::stop_token stop,
                               const VirtualProgress& progress,
                               std::shared_ptr<const protocol::ModelledLosses> losses = nullptr);

}  // namespace gossipd::daemon
