#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/config/wan_topology.h"

namespace gossipd::daemon {

struct CompareOptions;

// gossipctl compare on a wide-area network (--topology FILE, --preset wan:
// the default topology): each worker a network namespace, the kernel
// capping each link's rate (HTB; wan_tc_batch), each worker's transport
// adding the links' delay, jitter and packet loss (gossipd run --wan: this
// kernel has no netem).

// Reads --topology (or, with --preset wan and no --topology, the default)
// into options.wan; with --preset wan, --workers becomes its host count.
// Throws UsageError without --netns, with --bandwidth (the file sets the
// rates), or when --workers differs from the topology's hosts.
void resolve_wan(CompareOptions& options);
// The topology --topology or --preset wan names (nothing without either),
// --workers set or checked as resolve_wan does; refuses --bandwidth.
// gossipctl simulate models it (daemon/sim/modelled_hosts.h).
std::shared_ptr<const WanTopology> load_wan_topology(CompareOptions& options);

// Where a run's workers read the topology: OUT/topology.txt, written by
// write_wan_topology (the file as given, so that a user can edit it).
std::string wan_topology_path(const CompareOptions& options);
void write_wan_topology(const CompareOptions& options);

// tc -batch lines that shape host `host`'s eth0 (in its namespace) for
// `topology`: an HTB class per destination region at that link's rate, all
// under the host's own cap, each other host's address (`address(k)`)
// filtered into its region's class; what goes elsewhere (gossipctl's
// /status polls, to the bridge) is not capped.
std::vector<std::string> wan_tc_batch(const WanTopology& topology, size_t host,
                                      const std::function<std::string(size_t)>& address);

}  // namespace gossipd::daemon
