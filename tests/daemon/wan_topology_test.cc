// The WAN topology file (daemon/config/wan_topology.h): the default one,
// what a line sets, and one clear line for each kind of bad input.
#include "daemon/config/wan_topology.h"

#include <gtest/gtest.h>

#include <chrono>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare_wan.h"
#include "daemon/member/node_setup.h"

namespace gossipd::daemon {
namespace {

TEST(WanTopology, TheDefaultHasSixteenHostsInFourRegionsWithSlowerLinksBetweenThem) {
  const WanTopology t = parse_wan_topology(default_wan_topology_text(), "default");
  ASSERT_EQ(t.hosts(), 16u);
  ASSERT_EQ(t.regions.size(), 4u);
  EXPECT_EQ(t.region_of[0], t.region_of[3]);
  EXPECT_NE(t.region_of[3], t.region_of[4]);
  for (size_t a = 0; a < t.hosts(); ++a)
    for (size_t b = 0; b < t.hosts(); ++b) {
      const WanLink& l = t.link(a, b);
      EXPECT_EQ(l.delay_ms, t.link(b, a).delay_ms) << "links are symmetric";
      if (t.region_of[a] == t.region_of[b]) {
        EXPECT_EQ(l.delay_ms, 2);
      } else {
        EXPECT_GE(l.delay_ms, 30);
        EXPECT_LE(l.delay_ms, 80);
        EXPECT_GE(l.loss, 0.005);
        EXPECT_LE(l.loss, 0.02);
      }
    }
  EXPECT_EQ(t.host_rate[7], "10mbit");
  EXPECT_EQ(t.host_rate[0], "");
  EXPECT_EQ(t.describe(),
            "16 hosts in 4 regions (eu 4, us 4, asia 4, sa 4); inside a region 2 ms, 0% loss, 1gbit; between "
            "regions 30-80 ms, 0.5-2% loss, 10mbit-100mbit; slower hosts w7 10mbit, w13 10mbit");
}

TEST(WanTopology, ALinkLineOverridesBetweenForItsPairOnly) {
  const WanTopology t = parse_wan_topology(
      "region a w0 w1\nregion b w2\nregion c w3\nbetween delay 50 loss 0.01\nlink b a delay 10ms jitter 1\n",
      "t");
  EXPECT_EQ(t.link(0, 2).delay_ms, 10);
  EXPECT_EQ(t.link(2, 1).jitter_ms, 1);
  EXPECT_EQ(t.link(2, 1).loss, 0);
  EXPECT_EQ(t.link(0, 3).delay_ms, 50);
  EXPECT_EQ(t.link(0, 1).delay_ms, 0) << "no inside line: nothing added inside a region";
  EXPECT_EQ(t.host_index("w3"), 3);
  EXPECT_EQ(t.host_index("w4"), -1);
  EXPECT_EQ(t.host_index("worker"), -1);
}

// Each bad file fails with one line that names the line and what to write.
TEST(WanTopology, BadFilesAreOneLineNamingTheLine) {
  const std::string ok = "region a w0-w1\nregion b w2-w3\n";
  const std::vector<std::pair<std::string, std::string>> bad{
      {ok + "between delay -3\n", "t:3: delay -3 is negative"},
      {ok + "between delay 40 loss 1\n", "t:3: loss 1 is not in [0, 1)"},
      {ok + "between delay 40 loss 1.5\n", "t:3: loss 1.5 is not in [0, 1)"},
      {ok + "between delay 40\nhost w9 rate 10mbit\n", "host w9 is in no region"},
      {ok + "link a z delay 4\nbetween delay 1\n", "t:3: unknown region 'z'"},
      {ok, "no link between a and b"},
      {"region a w0 w2\nbetween delay 1\n", "w1 is in no region"},
      {"region a w0-w1\nregion b w1\n", "t:2: w1 is in two regions: a and b"},
      {ok + "between delay 40 rate fast\n", "rate 'fast' is not a tc rate"},
      {ok + "between delay forty\n", "delay 'forty' is not a number"},
      {ok + "between latency 40\n", "unknown key 'latency'"},
      {ok + "tunnel a b\n", "t:3: unknown line 'tunnel'"},
      {"", "no region"},
  };
  for (const auto& [text, expected] : bad) {
    try {
      parse_wan_topology(text, "t");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(expected), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_THROW(read_wan_topology("/nonexistent/topology.txt"), UsageError);
}

TEST(WanTopology, AWorkersLinksAreItsRowAndItMustBeAHost) {
  const WanTopology t = parse_wan_topology(
      "region a w0 w1\nregion b w2\ninside delay 1\nbetween delay 40 jitter 4 loss 0.01\n", "t");
  const auto links = wan_links(t, "w0", "t");
  ASSERT_EQ(links.size(), 2u);
  EXPECT_EQ(links.at("w1").delay, std::chrono::milliseconds(1));
  EXPECT_EQ(links.at("w2").delay, std::chrono::milliseconds(40));
  EXPECT_EQ(links.at("w2").jitter, std::chrono::milliseconds(4));
  EXPECT_EQ(links.at("w2").packet_loss, 0.01);
  try {
    wan_links(t, "w7", "t");
    ADD_FAILURE() << "w7 is not a host";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--wan t has no host 'w7'"), std::string::npos) << e.what();
  }
}

// The kernel's part of the WAN: each host's egress in an HTB class per
// destination region at that link's rate, under the host's own cap (HTB
// sends a class's rate whatever its parent's ceil: under a cap each class
// is assured its share of the cap and borrows up to the lesser of the two).
TEST(WanTopology, EachHostsEgressIsAClassPerRegionUnderItsOwnCap) {
  const WanTopology t = parse_wan_topology(
      "region a w0 w1\nregion b w2\ninside rate 1gbit\nbetween delay 40 rate 50mbit\nhost w2 rate 10mbit\n",
      "t");
  const auto address = [](size_t k) { return std::string("10.0.0.").append(std::to_string(k + 1)); };
  const std::vector<std::string> w0 = wan_tc_batch(t, 0, address);
  const std::vector<std::string> expected{
      "qdisc add dev eth0 root handle 1: htb default 2",
      "class add dev eth0 parent 1: classid 1:1 htb rate 10gbit ceil 10gbit",
      "class add dev eth0 parent 1: classid 1:2 htb rate 10gbit",
      "class add dev eth0 parent 1:1 classid 1:10 htb rate 1gbit ceil 1gbit",
      "class add dev eth0 parent 1:1 classid 1:11 htb rate 50mbit ceil 50mbit",
      "filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.2/32 flowid 1:10",
      "filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.3/32 flowid 1:11",
  };
  EXPECT_EQ(w0, expected);
  const std::vector<std::string> w2 = wan_tc_batch(t, 2, address);
  ASSERT_EQ(w2.size(), 7u);
  EXPECT_EQ(w2[1], "class add dev eth0 parent 1: classid 1:1 htb rate 10mbit ceil 10mbit");
  EXPECT_EQ(w2[3], "class add dev eth0 parent 1:1 classid 1:10 htb rate 5000kbit ceil 10mbit");
  EXPECT_EQ(w2[4], "class add dev eth0 parent 1:1 classid 1:11 htb rate 5000kbit ceil 10mbit");
  EXPECT_EQ(w2[5],
            "filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 10.0.0.1/32 flowid 1:10");
}

}  // namespace
}  // namespace gossipd::daemon
