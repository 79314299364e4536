#include "daemon/ctl/compare_hosts.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <asio.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "daemon/config/cli.h"
#include "daemon/config/run_options.h"
#include "daemon/ctl/compare_wan.h"

namespace gossipd::daemon {
namespace {

void sh(const std::string& cmd) {
  if (std::system((cmd + " 2>/dev/null").c_str()) != 0) {
    throw UsageError("--netns: '" + cmd +
                     "' failed (run as root, with iproute2 and a kernel with netns, tbf and htb)");
  }
}

bool is_executable_file(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

int link_send_buffer_kb(const std::string& rate) {
  const double bytes_per_second = tc_rate_bytes_per_second(rate);
  const double kib = std::ceil(bytes_per_second * 0.005 / 1024.0);
  return static_cast<int>(
      std::clamp(kib, double{RunOptions::kMinSendBufferKb}, double{RunOptions::kMaxSendBufferKb}));
}

std::vector<uint16_t> free_ports(int n) {
  asio::io_context io;
  std::vector<asio::ip::tcp::acceptor> held;
  std::vector<uint16_t> ports;
  const int span = 32000 - 20000;
  const int start = static_cast<int>(std::chrono::steady_clock::now().time_since_epoch().count() % span);
  for (int k = 0; k < span && static_cast<int>(ports.size()) < n; ++k) {
    const auto port = static_cast<uint16_t>(20000 + (start + k) % span);
    asio::ip::tcp::acceptor a(io);
    asio::error_code ec;
    a.open(asio::ip::tcp::v4(), ec);
    if (!ec) a.bind(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (ec) continue;
    held.push_back(std::move(a));
    ports.push_back(port);
  }
  if (static_cast<int>(ports.size()) < n) throw DaemonError("no free loopback ports in 20000-31999");
  return ports;
}

std::string find_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  return find_program_in(name,
                         std::string(path ? path : "/usr/local/bin:/usr/bin:/bin") + ":/usr/sbin:/sbin");
}

std::string find_program_in(const std::string& name, const std::string& dirs) {
  if (name.empty() || name.find('/') != std::string::npos) return "";
  std::stringstream list(dirs);
  for (std::string d; std::getline(list, d, ':');) {
    if (d.empty()) continue;
    std::error_code ec;
    const auto candidate = std::filesystem::absolute(std::filesystem::path(d) / name, ec);
    if (!ec && is_executable_file(candidate)) return candidate.lexically_normal().string();
  }
  return "";
}

std::string missing_netns_tool_message(const std::vector<std::string>& missing) {
  std::string names;
  for (size_t i = 0; i < missing.size(); ++i) names += (i == 0 ? "" : " and ") + missing[i];
  return "--netns needs " + names + " from iproute2, not found on PATH, in /usr/sbin or in /sbin: " +
         "install iproute2 (apt-get install iproute2, or run deploy/install-deps.sh)";
}

NetnsTools netns_tools(bool with_tc) {
  NetnsTools t{find_program("ip"), with_tc ? find_program("tc") : ""};
  std::vector<std::string> missing;
  if (t.ip.empty()) missing.push_back("ip");
  if (with_tc && t.tc.empty()) missing.push_back("tc");
  if (!missing.empty()) throw UsageError(missing_netns_tool_message(missing));
  return t;
}

void enter_netns(const std::string& name) {
  const std::string path = "/var/run/netns/" + name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw DaemonError("cannot enter network namespace " + name + ": " + why);
  }
  ::close(fd);
}

// The tools are found first: a missing one is reported before anything exists.
NetnsHosts::NetnsHosts(int hosts, const std::string& rate, const WanTopology* wan)
    : tools_(netns_tools(!rate.empty() || wan)), tag_(std::to_string(getpid() % 100000)) {
  subnet_ = "10.213." + std::to_string(getpid() % 250) + ".";
  const std::string& ip = tools_.ip;
  try {
    sh(ip + " link add " + bridge() + " type bridge");
    sh(ip + " addr add " + subnet_ + "254/24 dev " + bridge());
    sh(ip + " link set " + bridge() + " up");
    for (int i = 0; i < hosts; ++i) {
      const std::string ns = netns(i), veth = "gd" + tag_ + "v" + std::to_string(i);
      sh(ip + " netns add " + ns);
      namespaces_.push_back(ns);
      sh(ip + " link add " + veth + " type veth peer name " + veth + "p");
      sh(ip + " link set " + veth + "p netns " + ns);
      sh(ip + " -n " + ns + " link set " + veth + "p name eth0");
      sh(ip + " -n " + ns + " addr add " + address(i) + "/24 dev eth0");
      sh(ip + " -n " + ns + " link set eth0 up");
      sh(ip + " -n " + ns + " link set lo up");
      sh(ip + " link set " + veth + " master " + bridge());
      sh(ip + " link set " + veth + " up");
      if (!rate.empty()) {
        const std::string tbf = " root tbf rate " + rate + " burst 256kb latency 400ms";
        sh(tools_.tc + " qdisc add dev " + veth + tbf);
        sh(ip + " netns exec " + ns + " " + tools_.tc + " qdisc add dev eth0" + tbf);
      }
    }
    if (wan)
      for (int i = 0; i < hosts; ++i) shape(*wan, i);
  } catch (...) {
    cleanup();
    throw;
  }
}

// Host i's egress as the topology's links say: one tc -batch in its
// namespace, read from its stdin. Its packets one segment each (no GSO):
// HTB lets a class under its rate send a whole packet and owe the rest, so
// a 64 KB GSO packet would leave an idle 10 mbit host at once, as no link
// of that rate sends it (--group auto's padded PINGs saw 14 ms, not 26).
void NetnsHosts::shape(const WanTopology& wan, int host) {
  sh(tools_.ip + " -n " + netns(host) + " link set eth0 gso_max_segs 1");
  const std::string cmd = tools_.ip + " netns exec " + netns(host) + " " + tools_.tc + " -batch -";
  FILE* tc = ::popen((cmd + " 2>/dev/null").c_str(), "w");
  if (!tc) throw UsageError("--netns: cannot run '" + cmd + "'");
  for (const std::string& line : wan_tc_batch(wan, static_cast<size_t>(host),
                                              [this](size_t k) { return address(static_cast<int>(k)); }))
    std::fprintf(tc, "%s\n", line.c_str());
  if (::pclose(tc) != 0)
    throw UsageError("--netns: '" + cmd + "' failed (run as root, with a kernel with htb and u32)");
}

NetnsHosts::~NetnsHosts() { cleanup(); }

void NetnsHosts::cleanup() {
  // Deleting a namespace deletes its end of the veth, and so the pair.
  for (size_t i = 0; i < namespaces_.size(); ++i) {
    // The kernel frees a deleted namespace's veth asynchronously: delete our end now.
    std::system((ip() + " link del gd" + tag_ + "v" + std::to_string(i) + " 2>/dev/null").c_str());
    std::system((ip() + " netns del " + namespaces_[i] + " 2>/dev/null").c_str());
  }
  namespaces_.clear();
  std::system((ip() + " link del " + bridge() + " 2>/dev/null").c_str());
}

}  // namespace gossipd::daemon
