#include "daemon/cluster/suspicions.h"

namespace gossipd::daemon {

bool Suspicions::mark(const std::string& id, Clock::time_point deadline) {
  return deadlines_.emplace(id, deadline).second;
}

std::vector<std::string> Suspicions::expired(Clock::time_point now) const {
  std::vector<std::string> out;
  for (const auto& [id, deadline] : deadlines_) {
    if (now >= deadline) out.push_back(id);
  }
  return out;
}

void Suspicions::postpone(Clock::duration late) {
  for (auto& [id, deadline] : deadlines_) deadline += late;
}

}  // namespace gossipd::daemon
