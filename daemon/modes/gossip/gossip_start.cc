// A gossip run's start: every member up, the same layout, the same round
// to resume from, the groups' labels known.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "daemon/modes/gossip/gossip_worker.h"
#include "daemon/worker/round_floats.h"
#include "daemon/worker/same_layout.h"
#include "protocol/collectives/barrier.h"
#include "protocol/collectives/group.h"
#include "protocol/collectives/ring.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

uint64_t agree_on_oldest_round(protocol::Group& group, uint64_t mine) {
  // Two floats per member (round_to_floats); each contributes its own block.
  std::vector<float> all(2 * group.size(), 0.0f);
  const auto own = round_to_floats(mine);
  std::copy(own.begin(), own.end(), all.begin() + static_cast<std::ptrdiff_t>(2 * group.rank()));
  protocol::AllgatherRing(group, all).run();
  uint64_t oldest = mine;
  for (size_t r = 0; r < group.size(); ++r) oldest = std::min(oldest, round_from_floats(&all[2 * r]));
  return oldest;
}

void GossipWorker::start(std::stop_token stop) {
  if (!options_.joined) {
    protocol::CollectiveOptions copts;
    copts.timeout = options_.startup_timeout;
    copts.stop = stop;
    protocol::Group everyone(node_, protocol::tags::first(protocol::tags::User::kStartup), members_, copts);
    protocol::Barrier(everyone).run();  // every member is up (and knows the segments) before round 0
    agree_on_layout(everyone, trainer_);
    if (options_.resumed) {
      // Rounds name the topology draws and the segments' sequence: every
      // member goes on from the same one, the oldest checkpoint's.
      const uint64_t mine = trainer_.step_count();
      trainer_.set_step_count(agree_on_oldest_round(everyone, mine));
      if (trainer_.step_count() != mine) {
        spdlog::info("node '{}': resuming at round {} with the others (own checkpoint: round {})", node_.id(),
                     trainer_.step_count(), mine);
      }
    }
  }
  if (!options_.hierarchical) return;
  // Groups come from labels every member must know before round 1 (with
  // --group auto, measured now that every member is up).
  membership_.find_group();
  const auto deadline = std::chrono::steady_clock::now() + options_.startup_timeout;
  const uint64_t first = trainer_.step_count() + 1;
  if (membership_.wait_until([&] { return membership_.labels_known(first); }, deadline, stop)) return;
  if (stop.stop_requested()) throw protocol::Aborted(node_.id(), "waiting for group labels");
  throw protocol::TransportError(
      node_.id(), "",
      "node '" + node_.id() +
          "': the members' --group labels never all arrived "
          "within --startup-timeout-ms (are all members running with --hierarchical?)");
}

}  // namespace gossipd::daemon
