#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gossipd::daemon {

// A wide-area network on one machine: hosts in regions and what each link
// between two regions (or inside one) adds. Read from a small text file
// that a user can edit (`gossipctl compare --topology FILE`, `--preset wan`
// writes the default one beside its report; `gossipd run --wan FILE`):
//
//   # comments and blank lines are skipped
//   region eu w0-w3          the hosts (wK, or wA-wB) of a region
//   region us w4 w5 w6 w7
//   inside delay 2 jitter 0.5 rate 1gbit       every region's own links
//   between delay 60 jitter 5 loss 0.01 rate 50mbit   between two regions
//   link eu us delay 40 jitter 4 loss 0.005 rate 100mbit   one pair
//   host w5 rate 10mbit      one host's own link, slower than its region's
//
// delay and jitter are one-way milliseconds (>= 0), loss the fraction of
// packets lost (0 <= loss < 1), rate a tc rate (100mbit, 12500kbps). A
// pair not named by `link` takes `between`; every host w0..w(n-1) is in one
// region. Hosts are gossipd's node ids (gossipctl compare names its workers
// w0, w1, ...).
struct WanLink {
  double delay_ms = 0;
  double jitter_ms = 0;
  double loss = 0;
  std::string rate;  // "": not capped
};

struct WanTopology {
  std::vector<std::string> regions;
  std::vector<uint32_t> region_of;          // each host's region (index into regions)
  std::vector<std::string> host_rate;       // each host's own cap, "" for none
  std::vector<std::vector<WanLink>> links;  // [region][region], symmetric
  std::string text;                         // the file as read

  size_t hosts() const { return region_of.size(); }
  // The link between hosts a and b (inside their region when they share one).
  const WanLink& link(size_t a, size_t b) const { return links[region_of[a]][region_of[b]]; }
  // The host named `id` ("w3": 3), or -1 when the topology has no such host.
  int host_index(const std::string& id) const;
  // One line for a report: "16 hosts in 4 regions (eu 4, us 4, ...); inside
  // 2 ms ±0.5, 1gbit; between 40-80 ms, 0.5-2% loss, 50mbit-100mbit; w5 10mbit".
  std::string describe() const;
};

// Host k's name, "wK" (a stream: GCC 12 at -O3 takes "w" + std::to_string(k)
// for an overlapping copy, -Wrestrict's known false positive).
std::string wan_host_name(size_t k);

// Parses a topology; `where` names it in errors. Throws UsageError with one
// line "WHERE:LINE: what is wrong, and what to write".
WanTopology parse_wan_topology(const std::string& text, const std::string& where);
// Reads and parses the file at `path` (UsageError when it cannot be read).
WanTopology read_wan_topology(const std::string& path);

// The default WAN (gossipctl compare --preset wan): 16 hosts in 4 regions,
// 2 ms inside a region, 30-80 ms between, 0.5-2% loss, 1 gbit inside and
// 10-100 mbit between, two hosts slower.
const std::string& default_wan_topology_text();

}  // namespace gossipd::daemon
