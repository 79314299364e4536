#include "daemon/sim/modelled_hosts.h"

#include <charconv>
#include <cmath>
#include <map>
#include <stdexcept>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare_byzantine.h"
#include "daemon/ctl/compare_stragglers.h"

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

}  // namespace

void resolve_simulate_flags(SimulateOptions& o) {
  resolve_step_delays(o.compare);
  resolve_byzantine(o.compare);
  if (!o.compare.topology.empty() || o.compare.preset == "wan")
    throw UsageError(
        "gossipctl simulate does not model a WAN topology yet: run it with gossipctl compare --netns");
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
                  std::vector<double>(n, 1.0)};
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < n; ++i) {
    index[members[i]] = i;
    h.host.push_back(static_cast<uint32_t>(std::stoul(members[i].substr(1)) % hosts));
  }
  const auto at = [&](size_t k) { return index.at("w" + std::to_string(k)); };
  for (const auto& [k, f] : o.stragglers.values) h.compute[at(k)] = f;
  for (const auto& [k, rate] : o.slow_links.values) h.links[h.host[at(k)]].bytes_per_s = rate;
  return h;
}

}  // namespace gossipd::daemon
