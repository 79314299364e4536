#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gossipd::protocol {

// What an attacker learns of the honest replicas from the segments it
// receives (it mixes honestly, so its own values stay near theirs): per
// segment, how far received values lie from its own, coordinate by
// coordinate; per (peer, segment), that peer's values as last received.
// The attacks that need them (ALIE, dissensus) are not omniscient, as the
// papers' are: they see what one member of the cluster sees.
class AttackObservations {
 public:
  // `y` received from `peer` as segment `segment` while the own values
  // were `x` (both de-biased where the protocol keeps weights).
  void observe(std::string_view peer, uint32_t segment, std::span<const float> y, std::span<const float> x);

  // Per coordinate, the root of the mean square of y − x over the
  // segment's receptions (each weighing 1/4 against what came before);
  // empty before the first.
  std::span<const float> spread(uint32_t segment) const;
  // `peer`'s values of `segment` as last received; empty if never.
  std::span<const float> last(std::string_view peer, uint32_t segment) const;

 private:
  std::map<uint32_t, std::vector<float>> square_;  // mean square of y − x
  mutable std::vector<float> root_;
  std::map<uint32_t, std::map<std::string, std::vector<float>, std::less<>>> last_;  // per segment, per peer
};

}  // namespace gossipd::protocol
