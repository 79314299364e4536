#include "daemon/ctl/compare_wan.h"

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare.h"
#include "daemon/plan/link_model.h"

namespace gossipd::daemon {
namespace {

// What HTB is given for "not capped": more than a veth here carries.
constexpr const char* kUncapped = "10gbit";

// An HTB class id under 1: (hex minor).
std::string class_id(size_t minor) {
  std::ostringstream s;
  s << "1:" << std::hex << minor;
  return s.str();
}

// A region's class under a host's own cap: HTB sends a class's `rate`
// whatever its parent's ceil, so under a cap each class is assured its
// share of the cap and borrows up to the lesser of its link and the cap;
// uncapped, the link's rate.
std::string region_class_rates(const std::string& link, const std::string& cap, size_t regions) {
  if (cap.empty()) return "rate " + link + " ceil " + link;
  const double cap_bps = parse_bandwidth(cap) * 8, link_bps = parse_bandwidth(link) * 8;
  const auto share_kbit = static_cast<uint64_t>(std::max(8.0, cap_bps / static_cast<double>(regions) / 1e3));
  const std::string ceil = link_bps < cap_bps ? link : cap;
  return "rate " + std::to_string(share_kbit) + "kbit ceil " + ceil;
}

}  // namespace

std::shared_ptr<const WanTopology> load_wan_topology(CompareOptions& o) {
  if (o.topology.empty() && o.preset != "wan") return nullptr;
  const std::string what = o.topology.empty() ? "--preset wan" : "--topology";
  if (!o.bandwidth.empty()) throw UsageError(what + " sets each link's rate: leave out --bandwidth");
  auto t = std::make_shared<WanTopology>(o.topology.empty()
                                             ? parse_wan_topology(default_wan_topology_text(), "--preset wan")
                                             : read_wan_topology(o.topology));
  const int hosts = static_cast<int>(t->hosts());
  if (o.preset == "wan") {
    o.workers = hosts;
  } else if (o.workers != hosts) {
    throw UsageError("--topology " + o.topology + " has " + std::to_string(hosts) +
                     " hosts: give --workers " + std::to_string(hosts));
  }
  return t;
}

void resolve_wan(CompareOptions& o) {
  if (o.topology.empty() && o.preset != "wan") return;
  if (!o.netns)
    throw UsageError(std::string(o.topology.empty() ? "--preset wan" : "--topology") +
                     " runs each worker in its own network namespace: add --netns (as root)");
  o.wan = load_wan_topology(o);
}

std::string wan_topology_path(const CompareOptions& o) { return o.out + "/topology.txt"; }

void write_wan_topology(const CompareOptions& o) {
  if (!o.wan) return;
  std::ofstream out(wan_topology_path(o));
  out << o.wan->text;
  if (!out.flush()) throw DaemonError("cannot write " + wan_topology_path(o));
}

std::vector<std::string> wan_tc_batch(const WanTopology& t, size_t host,
                                      const std::function<std::string(size_t)>& address) {
  const std::string dev = "dev eth0 ";
  const std::string& own = t.host_rate[host].empty() ? std::string(kUncapped) : t.host_rate[host];
  std::vector<std::string> lines{
      "qdisc add " + dev + "root handle 1: htb default 2",
      "class add " + dev + "parent 1: classid 1:1 htb rate " + own + " ceil " + own,
      "class add " + dev + "parent 1: classid 1:2 htb rate " + std::string(kUncapped),
  };
  const uint32_t mine = t.region_of[host];
  for (size_t r = 0; r < t.regions.size(); ++r) {
    const std::string& link = t.links[mine][r].rate.empty() ? std::string(kUncapped) : t.links[mine][r].rate;
    lines.push_back("class add " + dev + "parent 1:1 classid " + class_id(0x10 + r) + " htb " +
                    region_class_rates(link, t.host_rate[host], t.regions.size()));
  }
  for (size_t k = 0; k < t.hosts(); ++k) {
    if (k == host) continue;
    lines.push_back("filter add " + dev + "parent 1: protocol ip prio 1 u32 match ip dst " + address(k) +
                    "/32 flowid " + class_id(0x10 + t.region_of[k]));
  }
  return lines;
}

}  // namespace gossipd::daemon
