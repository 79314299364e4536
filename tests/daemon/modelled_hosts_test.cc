// gossipctl simulate's --groups auto (daemon/sim/modelled_hosts.h): the
// groups a WAN's members would take from their measured round trips, a
// link's delay and the measuring PING's padding at its rate both counted.
#include "daemon/sim/modelled_hosts.h"

#include <gtest/gtest.h>

#include "daemon/config/wan_topology.h"

namespace gossipd::daemon {
namespace {

constexpr double kNearMs = 20;  // gossipd run's --group-near-ms

std::vector<std::string> groups(const std::string& text) {
  const WanTopology t = parse_wan_topology(text, "test");
  std::vector<std::string> g;
  for (size_t h = 0; h < t.hosts(); ++h) g.push_back(modelled_auto_group(t, h, kNearMs));
  return g;
}

TEST(ModelledAutoGroup, ARegionOfFastLinksIsAGroupNamedAfterItsLowestId) {
  EXPECT_EQ(
      groups("region a w0 w2\nregion b w1 w3\ninside delay 2 rate 1gbit\nbetween delay 30 rate 50mbit\n"),
      (std::vector<std::string>{"auto-w0", "auto-w1", "auto-w0", "auto-w1"}));
}

// 2 ms away, but its 32 KiB ACK takes 26 ms at 10 mbit: w3 is not near w2
// (nor w2 near w3), and founds a group of its own; at 100 mbit (2.6 ms) it
// is its region's.
TEST(ModelledAutoGroup, AHostBehindASlowLinkFoundsAGroupOfItsOwn) {
  const std::string wan =
      "region a w0-w1\nregion b w2-w3\ninside delay 2 rate 1gbit\nbetween delay 30 rate 50mbit\n";
  EXPECT_EQ(groups(wan + "host w3 rate 10mbit\n"),
            (std::vector<std::string>{"auto-w0", "auto-w0", "auto-w2", "auto-w3"}));
  EXPECT_EQ(groups(wan + "host w3 rate 100mbit\n"),
            (std::vector<std::string>{"auto-w0", "auto-w0", "auto-w2", "auto-w2"}));
}

TEST(ModelledAutoGroup, TheWanPresetsTwoSlowHostsEachFoundTheirOwn) {
  const auto g = groups(default_wan_topology_text());
  ASSERT_EQ(g.size(), 16u);
  // The lowest id as text, as choose_group names a group: asia's is w10.
  const std::vector<std::string> expected{
      "auto-w0",  "auto-w0",  "auto-w0",  "auto-w0",  "auto-w4",  "auto-w4",  "auto-w4",  "auto-w7",
      "auto-w10", "auto-w10", "auto-w10", "auto-w10", "auto-w12", "auto-w13", "auto-w12", "auto-w12"};
  EXPECT_EQ(g, expected);
}

}  // namespace
}  // namespace gossipd::daemon
