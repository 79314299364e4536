#include "daemon/ctl/soak_plan.h"

#include <algorithm>
#include <random>
#include <set>
#include <sstream>

#include "daemon/config/wan_topology.h"

namespace gossipd::daemon {

std::vector<ChurnEvent> plan_churn(int initial, int events, uint64_t seed) {
  std::vector<ChurnEvent> plan;
  std::set<int> live;
  for (int i = 0; i < initial; ++i) live.insert(i);
  std::mt19937_64 rng(seed);
  for (int k = 0; k < events && live.size() >= 2; ++k) {
    ChurnEvent e;
    auto it = live.begin();
    std::advance(it, static_cast<long>(std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng)));
    e.victim = *it;
    e.joiner = initial + k;
    e.contact = *live.begin() != e.victim ? *live.begin() : *std::next(live.begin());
    live.erase(e.victim);
    live.insert(e.joiner);
    plan.push_back(e);
  }
  return plan;
}

std::string soak_wan_text(int initial, const std::vector<ChurnEvent>& events) {
  const WanTopology preset = parse_wan_topology(default_wan_topology_text(), "--preset wan");
  const int regions = static_cast<int>(preset.regions.size()),
            hosts = initial + static_cast<int>(events.size());
  std::vector<int> region(static_cast<size_t>(hosts));
  for (int i = 0; i < initial; ++i)
    region[static_cast<size_t>(i)] = std::min(regions - 1, i * regions / initial);
  for (const ChurnEvent& e : events)
    region[static_cast<size_t>(e.joiner)] = region[static_cast<size_t>(e.victim)];
  std::ostringstream s;
  s << "# gossipctl soak's WAN: --preset wan's links over " << initial << " hosts and " << events.size()
    << " joiners (each in the region of the member it replaces)\n";
  for (int r = 0; r < regions; ++r) {
    s << "region " << preset.regions[static_cast<size_t>(r)];
    for (int h = 0; h < hosts; ++h) {
      if (region[static_cast<size_t>(h)] == r) s << ' ' << wan_host_name(static_cast<size_t>(h));
    }
    s << '\n';
  }
  // The preset's link and host lines as they are (hosts past ours left out).
  std::istringstream lines(default_wan_topology_text());
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string kind, host;
    words >> kind >> host;
    if (kind == "inside" || kind == "between" || kind == "link") s << line << '\n';
    if (kind == "host" && preset.host_index(host) >= 0 && preset.host_index(host) < initial)
      s << line << '\n';
  }
  return s.str();
}

}  // namespace gossipd::daemon
