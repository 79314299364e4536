#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gossipd::daemon {

// Where gossipctl compare runs its workers: loopback ports, or one network
// namespace per worker.

// A tc rate: bits (bit) or bytes (bps) per second with an SI prefix, e.g. 100mbit.
bool is_tc_rate(const std::string& rate);

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

// One network namespace per worker, each with a veth into a private bridge
// and its own address 10.213.S.(i+1)/24 (S from our pid, so two runs do not
// collide); the bridge has .254, so gossipctl reaches every worker's /status.
// With a rate, a tbf qdisc caps both ends of every veth. Everything is
// deleted in the destructor (also on errors and Ctrl-C).
class NetnsHosts {
 public:
  NetnsHosts(int hosts, const std::string& rate);
  ~NetnsHosts();
  NetnsHosts(const NetnsHosts&) = delete;
  NetnsHosts& operator=(const NetnsHosts&) = delete;

  std::string netns(int i) const { return "gd" + tag_ + "w" + std::to_string(i); }
  std::string address(int i) const { return subnet_ + std::to_string(i + 1); }
  std::string bridge_address() const { return subnet_ + "254"; }

 private:
  std::string bridge() const { return "gdbr" + tag_; }
  void cleanup();

  std::string tag_, subnet_;
  std::vector<std::string> namespaces_;
};

// Moves the calling thread (call it before starting any other) into the
// network namespace `name` made by NetnsHosts, as `ip netns exec` does.
// Throws std::runtime_error naming it when that fails.
void enter_netns(const std::string& name);

}  // namespace gossipd::daemon
