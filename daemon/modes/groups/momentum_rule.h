#pragma once

#include <cstddef>

namespace gossipd::daemon {

// Omnivore's estimate of the momentum that asynchrony between `groups`
// groups adds (1 - 1/g), and the explicit momentum --momentum auto uses:
// the target less it, not below the floor.
float implicit_momentum(size_t groups);
float auto_momentum(float target, float floor, size_t groups);

// How the compute groups set the owners' momentum.
struct MomentumRule {
  bool automatic = false;  // --momentum auto; otherwise --momentum stays
  float target = 0.9f;
  float floor = 0.0f;
};

}  // namespace gossipd::daemon
