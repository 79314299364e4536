#include "daemon/modes/groups/momentum_rule.h"

#include <algorithm>

namespace gossipd::daemon {

float implicit_momentum(size_t groups) {
  return groups == 0 ? 0.0f : 1.0f - 1.0f / static_cast<float>(groups);
}

float auto_momentum(float target, float floor, size_t groups) {
  return std::max(floor, target - implicit_momentum(groups));
}

}  // namespace gossipd::daemon
