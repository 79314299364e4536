#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "daemon/config/tc_rate.h"
#include "daemon/config/wan_topology.h"

namespace gossipd::daemon {

// Where gossipctl compare runs its workers: loopback ports, or one network
// namespace per worker.

// A send buffer (KiB) holding ~5 ms of `rate` (a tc rate such as 100mbit or
// 12500kbps), within gossipd run's limits: enough to keep such a link busy,
// small enough that little waits in the host's queue ahead of a control
// message. Throws UsageError if `rate` is not a tc rate.
int link_send_buffer_kb(const std::string& rate);

// Loopback ports for the workers to bind, below Linux's ephemeral range
// (32768 and up): the workers' own port-0 binds (their HTTP servers) and
// outgoing connections take ephemeral ports, so they can never take these.
// Each is checked free by binding it; all are held together, so they differ.
std::vector<uint16_t> free_ports(int n);

// The absolute path of the executable `name` in PATH's directories, then in
// /usr/sbin and /sbin (a root shell's PATH may lack them); "" if none has it.
std::string find_program(const std::string& name);
// The same in the directories of `dirs` ("DIR:DIR:...", searched in order).
std::string find_program_in(const std::string& name, const std::string& dirs);

// The iproute2 programs NetnsHosts runs, as absolute paths.
struct NetnsTools {
  std::string ip;
  std::string tc;  // "" when no link is capped
};

// The one line --netns fails with when iproute2's `missing` programs (ip,
// tc) are not found: which ones, and what to install.
std::string missing_netns_tool_message(const std::vector<std::string>& missing);

// Finds ip, and tc when `with_tc` (a rate caps the links); throws UsageError
// with missing_netns_tool_message when one is not found.
NetnsTools netns_tools(bool with_tc);

// One network namespace per worker, each with a veth into a private bridge
// and its own address 10.213.S.(i+1)/24 (S from our pid, so two runs do not
// collide); the bridge has .254, so gossipctl reaches every worker's /status.
// With a rate, a tbf qdisc caps both ends of every veth; with a WAN
// topology, each host's egress is shaped as compare_wan.h's wan_tc_batch
// says (the links' rates; their delays are the workers' --wan). Everything
// is deleted in the destructor (also on errors and Ctrl-C). Throws
// UsageError before it creates anything when ip (or, with a rate or a WAN,
// tc) is not found.
class NetnsHosts {
 public:
  NetnsHosts(int hosts, const std::string& rate, const WanTopology* wan = nullptr);
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  std::string netns(int i) const { return "gd" + tag_ + "w" + std::to_string(i); }
  std::string address(int i) const { return subnet_ + std::to_string(i + 1); }
  std::string bridge_address() const { return subnet_ + "254"; }
  // The absolute path of iproute2's ip, for `ip netns exec` in a worker's argv.
  const std::string& ip() const { return tools_.ip; }

 private:
  std::string bridge() const { return "gdbr" + tag_; }
  void shape(const WanTopology& wan, int host);
  void cleanup();

  NetnsTools tools_;
  std::string tag_, subnet_;
  std::vector<std::string> namespaces_;
};

// Moves the calling thread (call it before starting any other) into the
// network namespace `name` made by NetnsHosts, as `ip netns exec` does.
// Throws DaemonError naming it when that fails.
void enter_netns(const std::string& name);

}  // namespace gossipd::daemon
