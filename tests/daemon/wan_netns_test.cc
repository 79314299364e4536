// A WAN on network namespaces (compare_wan.h): the kernel's part (each
// host's egress in an HTB class per destination region), and gossipctl
// compare --topology end to end: every worker meets its links, the report
// states them, nothing is left behind; a topology a command cannot use is
// one line. The namespaces need root; the refusals do not.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <thread>
#include <vector>

#include "daemon/config/wan_topology.h"
#include "daemon/ctl/child_process.h"
#include "daemon/ctl/compare_hosts.h"
#include "daemon/observe/metrics_log.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

// Bytes tc counted as sent in class `id` of `netns`'s eth0 (-1: no such class).
long long class_sent(const daemon::NetnsHosts& hosts, const std::string& netns, const std::string& id) {
  const std::string cmd =
      hosts.ip() + " netns exec " + netns + " " + daemon::find_program("tc") + " -s class show dev eth0";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    ::pclose(p);
  }
  std::smatch m;
  const std::regex sent("class htb " + id + " [^\\n]*\\n *Sent ([0-9]+) bytes");
  return std::regex_search(out, m, sent) ? std::stoll(m[1].str()) : -1;
}

// A socket of a thread that entered `netns` (each thread its own namespace).
int socket_in(const std::string& netns) {
  int fd = -1;
  std::thread([&] {
    daemon::enter_netns(netns);
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
  }).join();
  return fd;
}

sockaddr_in address_of(const std::string& ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

TEST(WanHosts, WhatAHostSendsToAnotherRegionGoesThroughThatRegionsClass) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  const daemon::WanTopology wan =
      daemon::parse_wan_topology("region a w0\nregion b w1\nbetween delay 5 rate 200mbit\n", "test");
  daemon::NetnsHosts hosts(2, "", &wan);
  // w1 listens; w0 connects and sends 2 MB (sockets keep their namespace).
  const int listener = socket_in(hosts.netns(1));
  ASSERT_GE(listener, 0);
  sockaddr_in at = address_of(hosts.address(1), 7199);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  auto received = std::async(std::launch::async, [&] {
    const int c = ::accept(listener, nullptr, nullptr);
    size_t total = 0;
    std::vector<char> buf(1 << 16);
    for (ssize_t n; (n = ::read(c, buf.data(), buf.size())) > 0;) total += static_cast<size_t>(n);
    ::close(c);
    return total;
  });
  const int sender = socket_in(hosts.netns(0));
  ASSERT_EQ(::connect(sender, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  const std::vector<char> data(2 << 20, 'x');
  for (size_t off = 0; off < data.size();) {
    const ssize_t n = ::write(sender, data.data() + off, data.size() - off);
    ASSERT_GT(n, 0);
    off += static_cast<size_t>(n);
  }
  ::close(sender);
  EXPECT_EQ(received.get(), data.size());
  ::close(listener);
  EXPECT_GE(class_sent(hosts, hosts.netns(0), "1:11"), static_cast<long long>(data.size()))
      << "w0's traffic to region b did not go through b's class";
  EXPECT_LT(class_sent(hosts, hosts.netns(0), "1:2"), 100000) << "it went through the uncapped default";
  EXPECT_EQ(class_sent(hosts, hosts.netns(0), "1:10"), 0) << "w0's own region's class carried it";
}

class CompareOnWan : public ::testing::Test {
 protected:
  TempDir tmp_{"gossipd_compare_wan_test"};
  const std::string dir_ = tmp_.path();
  const std::string out_ = dir_ + "/report";

  // A short compare --netns of 4 crossover workers on `topology`.
  RunResult compare(const std::string& topology, std::vector<std::string> flags) {
    std::ofstream(dir_ + "/wan.txt") << topology;
    std::vector<std::string> argv{bin("gossipctl"),
                                  "compare",
                                  "--netns",
                                  "--topology",
                                  dir_ + "/wan.txt",
                                  "--workers",
                                  "4",
                                  "--algos",
                                  "crossover",
                                  "--epochs",
                                  "1",
                                  "--batch",
                                  "32",
                                  "--test-limit",
                                  "200",
                                  "--target",
                                  "0.5",
                                  "--out",
                                  out_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return run(argv, 300s);
  }
};

// A WAN (--topology): 4 hosts in 2 regions, each in its own namespace,
// the kernel capping the links' rates (tc accepts every host's HTB batch
// or the run fails), every worker given the topology (--wan) and its
// transport retransmitting for the lost packets; the report states the
// network, the topology lies beside it, and nothing is left behind.
TEST_F(CompareOnWan, OnAWanTopologyEveryWorkerMeetsItsLinksAndTheReportStatesThem) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  ASSERT_FALSE(daemon::find_program("ip").empty()) << "--netns needs iproute2";
  const NetworkState before = network_state();
  const std::string topology =
      "region a w0-w1\nregion b w2-w3\ninside delay 1 rate 1gbit\n"
      "between delay 20 jitter 2 loss 0.01 rate 50mbit\nhost w3 rate 20mbit\n";
  const auto r = compare(topology, {"--train-limit", "2000"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(daemon::read_file(out_ + "/topology.txt"), topology);
  uint64_t retransmitted = 0;
  for (int i = 0; i < 4; ++i) {
    const auto records = daemon::read_control_records(out_ + "/crossover/w" + std::to_string(i) + ".control");
    ASSERT_FALSE(records.empty()) << "w" << i;
    EXPECT_EQ(records.back().event(), "done") << "w" << i;
    EXPECT_GT(records.back().faults().sent(), 0u) << "w" << i << " was not given the WAN";
    retransmitted += records.back().faults().retransmitted();
  }
  EXPECT_GT(retransmitted, 0u) << "1% of packets lost between the regions, yet no message retransmitted";
  const std::string report = daemon::read_file(out_ + "/report.md");
  EXPECT_NE(
      report.find("a WAN: 4 hosts in 2 regions (a 2, b 2); inside a region 1 ms, 0% loss, 1gbit; between "
                  "regions 20 ms, 1% loss, 50mbit; slower hosts w3 20mbit"),
      std::string::npos)
      << report;
  EXPECT_TRUE(nothing_left_beyond(before, 120s)) << "a namespace or a link was left behind";
}

// --groups auto on netns links: each member measures its peers' round
// trips with padded PINGs, so w3, 1 ms from w2 but sending at 10 mbit (its
// 32 KiB ACKs take 26 ms), is near nobody and founds a group of its own
// (and w2 with it one of its own); w0 and w1 are region a's group.
TEST_F(CompareOnWan, GroupsAutoSetsAHostBehindASlowLinkApartFromItsRegion) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  ASSERT_FALSE(daemon::find_program("ip").empty()) << "--netns needs iproute2";
  const NetworkState before = network_state();
  const auto r = compare(
      "region a w0-w1\nregion b w2-w3\ninside delay 1 rate 1gbit\nbetween delay 20 rate 50mbit\nhost w3 rate "
      "10mbit\n",
      {"--groups", "auto", "--train-limit", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::vector<std::string> expected{"auto-w0", "auto-w0", "auto-w2", "auto-w3"};
  for (int i = 0; i < 4; ++i) {
    const auto records = daemon::read_control_records(out_ + "/crossover/w" + std::to_string(i) + ".control");
    ASSERT_FALSE(records.empty()) << "w" << i;
    EXPECT_EQ(records.back().event(), "done") << "w" << i;
    EXPECT_EQ(records.back().status().group(), expected[i]) << "w" << i;
  }
  EXPECT_TRUE(nothing_left_beyond(before, 120s)) << "a namespace or a link was left behind";
}

// What compare, simulate and gossipd run say of a topology they cannot use:
// one line each, before anything runs (no root needed to be told).
TEST_F(CompareOnWan, ATopologyTheRunCannotUseIsOneLine) {
  std::ofstream(dir_ + "/ok.txt") << "region a w0 w1\nregion b w2 w3\nbetween delay 30\n";
  std::ofstream(dir_ + "/bad.txt") << "region a w0 w1\nregion b w2 w3\nbetween delay -3\n";
  const std::string out = dir_ + "/x";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{bin("gossipctl"), "compare", "--topology", dir_ + "/ok.txt", "--workers", "4", "--out", out},
       "--topology runs each worker in its own network namespace: add --netns"},
      {{bin("gossipctl"), "compare", "--netns", "--topology", dir_ + "/ok.txt", "--workers", "3", "--out",
        out},
       "has 4 hosts: give --workers 4"},
      {{bin("gossipctl"), "compare", "--netns", "--topology", dir_ + "/bad.txt", "--workers", "4", "--out",
        out},
       "bad.txt:3: delay -3 is negative"},
      {{bin("gossipctl"), "compare", "--netns", "--bandwidth", "1gbit", "--preset", "wan", "--out", out},
       "--preset wan sets each link's rate: leave out --bandwidth"},
      {{bin("gossipctl"), "simulate", "--topology", dir_ + "/bad.txt", "--workers", "4", "--out", out},
       "bad.txt:3: delay -3 is negative"},
      {{bin("gossipctl"), "simulate", "--topology", dir_ + "/ok.txt", "--workers", "3", "--out", out},
       "has 4 hosts: give --workers 4"},
      {{bin("gossipd"), "run", "--id", "w0", "--wan", dir_ + "/bad.txt"}, "bad.txt:3: delay -3 is negative"},
  };
  for (const auto& [argv, expected] : cases) {
    const auto r = run(argv, 30s);
    EXPECT_NE(r.exit_code, 0) << argv[1];
    EXPECT_NE(r.err.find(expected), std::string::npos) << argv[1] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing ran";
}

}  // namespace
}  // namespace gossipd::testing
