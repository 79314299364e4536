#include "daemon/sim/modelled_hosts.h"

#include <charconv>
#include <cmath>
#include <map>
#include <stdexcept>

#include "daemon/cluster/auto_group.h"
#include "daemon/config/cli.h"
#include "daemon/config/run_options.h"
#include "daemon/ctl/compare_byzantine.h"
#include "daemon/ctl/compare_stragglers.h"
#include "daemon/ctl/compare_wan.h"

namespace gossipd::daemon {
namespace {

double factor(const std::string& text, const std::string& item) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v > 0) || !std::isfinite(v))
    throw UsageError("--stragglers: '" + item +
                     "' is not a positive factor (e.g. w3=2.5: its steps take 2.5x)");
  return v;
}

double bandwidth(const std::string& text, const std::string& flag) {
  try {
    return parse_bandwidth(text);
  } catch (const std::invalid_argument& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

// --topology / --preset wan: the file sets every link; the flags that set
// them otherwise are refused.
void resolve_wan_flags(SimulateOptions& o) {
  const std::string what = o.compare.topology.empty() ? "--preset wan" : "--topology";
  const bool wan = !o.compare.topology.empty() || o.compare.preset == "wan";
  if (wan && !o.slow_links.text.empty())
    throw UsageError(what + " sets each host's rate (its `host` lines): leave out --slow-links");
  if (wan && o.latency_ms != SimulateOptions{}.latency_ms)
    throw UsageError(what + " sets each link's delay: leave out --latency-ms");
  if (wan && o.workers_per_host != 1)
    throw UsageError(what + " puts each worker on a host of its own: leave out --workers-per-host");
  o.compare.wan = load_wan_topology(o.compare);
  if (!o.compare.wan && o.compare.groups == kAutoGroups)
    throw UsageError(
        "--groups auto needs the round trips the workers measure; simulate models them on a WAN only "
        "(--topology FILE or --preset wan): give --groups G, or a topology");
}

WanPath wan_path(const WanLink& l, const std::string& where) {
  return {l.delay_ms / 1e3, l.loss, l.rate.empty() ? kUncappedBytesPerS : bandwidth(l.rate, where)};
}

WanModel wan_model(const WanTopology& t) {
  WanModel w;
  w.region = t.region_of;
  w.receive_bytes_per_s = kUncappedBytesPerS;
  for (size_t a = 0; a < t.regions.size(); ++a) {
    w.paths.emplace_back();
    for (size_t b = 0; b < t.regions.size(); ++b)
      w.paths.back().push_back(wan_path(t.links[a][b], "--topology " + t.regions[a] + "-" + t.regions[b]));
  }
  return w;
}

// What host `from` sends to host `to` at: the path's rate under `from`'s
// own cap (compare_wan.cc's ceil; the receiving side is not capped).
double sending_rate(const WanTopology& t, size_t from, size_t to) {
  const std::string& path = t.link(from, to).rate;
  double r = path.empty() ? kUncappedBytesPerS : parse_bandwidth(path);
  if (!t.host_rate[from].empty()) r = std::min(r, parse_bandwidth(t.host_rate[from]));
  return r;
}

double measured_round_trip_ms(const WanTopology& t, size_t a, size_t b) {
  const double pad = RoundTrips::kPaddingBytes;
  return 2 * t.link(a, b).delay_ms + 1e3 * (pad / sending_rate(t, a, b) + pad / sending_rate(t, b, a));
}

}  // namespace

std::string modelled_auto_group(const WanTopology& t, size_t host, double near_ms) {
  std::string lowest = wan_host_name(host);  // as choose_group names it: the least id, as text
  for (size_t k = 0; k < t.hosts(); ++k) {
    if (measured_round_trip_ms(t, host, k) <= near_ms) lowest = std::min(lowest, wan_host_name(k));
  }
  return "auto-" + lowest;
}

std::string modelled_group(const SimulateOptions& o, size_t worker, const std::string& label) {
  if (label != kAutoGroup || !o.compare.wan) return label;
  return modelled_auto_group(*o.compare.wan, worker, RunOptions{}.group_near_ms);
}

void resolve_simulate_flags(SimulateOptions& o) {
  resolve_wan_flags(o);
  resolve_step_delays(o.compare);
  resolve_byzantine(o.compare);
  o.link_bytes_per_s = bandwidth(
      o.compare.bandwidth.empty() ? kDefaultSimulatedBandwidth : o.compare.bandwidth, "--bandwidth");
  if (!(o.latency_ms >= 0) || !std::isfinite(o.latency_ms))
    throw UsageError("--latency-ms must be 0 or more (milliseconds per message)");
  if (!(o.burst_kb >= 0) || !std::isfinite(o.burst_kb))
    throw UsageError("--burst-kb must be 0 or more (KiB a link sends at once after idling)");
  if (!(o.step_ms >= 0) || !std::isfinite(o.step_ms))
    throw UsageError("--step-ms must be 0 (profile the model) or more");
  if (!(o.drop_rate >= 0 && o.drop_rate < 1))
    throw UsageError("--drop-rate must be in [0, 1): the share of gossip messages lost");
  resolve(o.stragglers, "--stragglers", o.compare.workers, factor);
  resolve(o.slow_links, "--slow-links", o.compare.workers,
          [](const std::string& text, const std::string& item) {
            return bandwidth(text, "--slow-links " + item.substr(0, item.find('=')));
          });
  if (o.workers_per_host < 1 || o.workers_per_host > o.compare.workers)
    throw UsageError("--workers-per-host " + std::to_string(o.workers_per_host) + ": give 1 to --workers (" +
                     std::to_string(o.compare.workers) + ")");
  o.host_bytes_per_s = bandwidth(o.host_bandwidth, "--host-bandwidth");
}

ModelledHosts modelled_hosts(const SimulateOptions& o, const std::vector<std::string>& members) {
  if (!(o.link_bytes_per_s > 0 && o.host_bytes_per_s > 0))
    throw std::logic_error("modelled_hosts: the simulate flags were not resolved (resolve_simulate_flags)");
  const size_t n = members.size(), per_host = static_cast<size_t>(o.workers_per_host);
  const size_t hosts = (n + per_host - 1) / per_host;
  const LinkModel link{o.latency_ms / 1e3, o.link_bytes_per_s, 0};
  ModelledHosts h{std::vector<LinkModel>(hosts, link),
                  {},
                  LinkModel{kHostLatencyS, o.host_bytes_per_s, 0},
                  std::vector<double>(n, 1.0),
                  {}};
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) {
    index[members[i]] = i;
    h.host.push_back(static_cast<uint32_t>(std::stoul(members[i].substr(1)) % hosts));
  }
  const auto at = [&](size_t k) { return index.at("w" + std::to_string(k)); };
  for (const auto& [k, f] : o.stragglers.values) h.compute[at(k)] = f;
  for (const auto& [k, rate] : o.slow_links.values) h.links[h.host[at(k)]].bytes_per_s = rate;
  if (o.compare.wan) {
    h.wan = wan_model(*o.compare.wan);
    for (size_t k = 0; k < hosts; ++k) {
      const std::string& cap = o.compare.wan->host_rate[k];
      h.links[k] = LinkModel{
          0, cap.empty() ? kUncappedBytesPerS : bandwidth(cap, "--topology host w" + std::to_string(k)), 0};
    }
  }
  return h;
}

}  // namespace gossipd::daemon
