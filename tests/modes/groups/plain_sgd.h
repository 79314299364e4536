#pragma once

#include "trainer/optimizer.h"

namespace gossipd::daemon {

// An owner's optimizer for tests that follow the values by hand: SGD
// without momentum.
inline trainer::OptimizerOptions plain_sgd() {
  trainer::OptimizerOptions o;
  o.momentum = 0;
  return o;
}

}  // namespace gossipd::daemon
