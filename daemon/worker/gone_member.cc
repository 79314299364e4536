#include "daemon/worker/gone_member.h"

#include <thread>

namespace gossipd::daemon {

void rethrow_naming_the_gone(const GoneMember& g, const protocol::TransportError& error, uint64_t round,
                             std::stop_token stop) {
  const auto deadline = std::chrono::steady_clock::now() + g.wait;
  while (std::chrono::steady_clock::now() < deadline && !stop.stop_requested()) {
    const topology::View view = g.membership.view_at(round);
    for (const std::string& m : g.members) {
      if (view.contains(m)) continue;
      throw protocol::TransportError(g.self, m,
                                     "node '" + g.self + "': " + g.what + " '" + m + "' is gone (" +
                                         error.what() + "); it cannot train without it: " + g.restart);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw;  // the error being handled, its type kept
}

}  // namespace gossipd::daemon
