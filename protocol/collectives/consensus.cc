#include "protocol/collectives/consensus.h"

#include "protocol/collectives/ring.h"

namespace gossipd::protocol {

double ConsensusDistance::run(std::span<const float> x) {
  const double n = static_cast<double>(group_.size());
  sum_.assign(x.begin(), x.end());
  AllreduceRing(group_, sum_).run();
  double local = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(sum_[i]) / n;
    local += d * d;
  }
  // Summed in float by the ring: exact enough for a monitoring figure.
  std::vector<float> total{static_cast<float>(local)};
  AllreduceRing(group_, total).run();
  return static_cast<double>(total[0]) / n;
}

}  // namespace gossipd::protocol
