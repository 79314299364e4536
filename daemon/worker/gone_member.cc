#include "daemon/worker/gone_member.h"

namespace gossipd::daemon {

void rethrow_naming_the_gone(const GoneMember& g, const protocol::TransportError& error, uint64_t round,
                             std::stop_token stop) {
  std::string gone;
  const auto someone_gone = [&] {
    const topology::View view = g.membership.view_at(round);
    for (const std::string& m : g.members) {
      if (view.contains(m)) continue;
      gone = m;
      return true;
    }
    return false;
  };
  if (g.membership.wait_until(someone_gone, std::chrono::steady_clock::now() + g.wait, stop)) {
    throw protocol::TransportError(g.self, gone,
                                   "node '" + g.self + "': " + g.what + " '" + gone + "' is gone (" +
                                       error.what() + "); it cannot train without it: " + g.restart);
  }
  throw;  // the error being handled, its type kept
}

}  // namespace gossipd::daemon
