// The kernel's part of a WAN (NetnsHosts with a topology): what one host
// sends to a host of another region goes through that region's HTB class,
// and what it sends to the bridge (gossipctl's polls) through the uncapped
// default. Counted by tc on the sender's eth0. Needs root.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <future>
#include <regex>
#include <thread>
#include <vector>

#include "daemon/config/wan_topology.h"
#include "daemon/ctl/compare_hosts.h"

namespace gossipd::testing {
namespace {

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

}  // namespace
}  // namespace gossipd::testing
