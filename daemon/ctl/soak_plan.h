#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gossipd::daemon {

// gossipctl soak's churn, planned before anything starts, so that the WAN
// has a host for every member that will ever run: `initial` members w0..,
// then every event kills one live member (drawn from the seed) and starts a
// new one, w<initial + k>, joining through the lowest live id but the
// victim's (then the other live members, should it die first), on a host
// of its own in the victim's region.
struct ChurnEvent {
  int victim = 0;   // index of the member killed
  int joiner = 0;   // index of the new member: initial + k
  int contact = 0;  // the live member it joins through
};

std::vector<ChurnEvent> plan_churn(int initial, int events, uint64_t seed);

// The soak's WAN: --preset wan's links (daemon/config/wan_topology.h's
// default: 4 regions, 2 ms inside, 30-80 ms and 0.5-2% loss between, the
// same slow hosts where they exist) over `initial` hosts dealt to the
// regions in blocks, and each event's joiner in its victim's region.
std::string soak_wan_text(int initial, const std::vector<ChurnEvent>& events);

}  // namespace gossipd::daemon
