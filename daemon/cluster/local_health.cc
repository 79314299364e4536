#include "daemon/cluster/local_health.h"

namespace gossipd::daemon {

void LocalHealth::adjust(int delta) {
  if (delta < 0 && score_ > 0) --score_;
  if (delta > 0 && score_ < max_) ++score_;
}

}  // namespace gossipd::daemon
