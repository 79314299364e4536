#include "daemon/cluster/probe_order.h"

#include <algorithm>

namespace gossipd::daemon {

std::optional<std::string> ProbeOrder::next(const std::vector<std::string>& members,
                                            const std::function<bool(const std::string&)>& listed) {
  if (members.empty()) return std::nullopt;
  for (int passes = 0; passes < 2; ++passes) {
    while (at_ < pass_.size()) {
      const std::string& id = pass_[at_++];
      if (listed(id)) return id;
    }
    pass_ = members;
    std::shuffle(pass_.begin(), pass_.end(), rng_);
    at_ = 0;
  }
  return std::nullopt;
}

std::vector<std::string> draw_others(const std::vector<std::string>& members, const std::string& except,
                                     size_t k, std::mt19937_64& rng) {
  // k draws by index (a few tries each), not a shuffle of every member.
  std::vector<std::string> drawn;
  if (members.empty()) return drawn;
  std::uniform_int_distribution<size_t> pick(0, members.size() - 1);
  for (size_t tries = 0; drawn.size() < k && tries < 4 * k + 8; ++tries) {
    const std::string& m = members[pick(rng)];
    if (m != except && std::find(drawn.begin(), drawn.end(), m) == drawn.end()) drawn.push_back(m);
  }
  return drawn;
}

}  // namespace gossipd::daemon
