#include "daemon/modes/gossip/final_average.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "protocol/collectives/group.h"
#include "protocol/collectives/ring.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/tags.h"

namespace gossipd::daemon {

uint32_t final_average(protocol::Node& node, const topology::View& view, std::span<float> params,
                       std::span<float> optimizer_state, std::chrono::milliseconds timeout,
                       std::stop_token stop) {
  if (view.size() < 2) return 1;  // alone: its replica is the average
  std::vector<float> sum(params.begin(), params.end());
  sum.insert(sum.end(), optimizer_state.begin(), optimizer_state.end());
  protocol::CollectiveOptions copts;
  copts.timeout = timeout;
  copts.stop = std::move(stop);
  try {
    // A fresh tag per view: a view met before (its id wraps) holds no stale pieces of this one.
    protocol::Group everyone(node, protocol::tags::range(protocol::tags::User::kFinalAverage).at(view.id()),
                             view.members(), copts);
    protocol::AllreduceRing(everyone, sum).run();
  } catch (const protocol::Aborted&) {
    throw;
  } catch (const std::exception& e) {
    spdlog::warn(
        "node '{}': no final average, its replica is its own: {} (every member must finish at "
        "the same step)",
        node.id(), e.what());
    return 0;
  }
  const float n = static_cast<float>(view.size());
  std::transform(sum.begin(), sum.begin() + static_cast<std::ptrdiff_t>(params.size()), params.begin(),
                 [n](float v) { return v / n; });
  std::transform(sum.begin() + static_cast<std::ptrdiff_t>(params.size()), sum.end(), optimizer_state.begin(),
                 [n](float v) { return v / n; });
  return static_cast<uint32_t>(view.size());
}

}  // namespace gossipd::daemon
