#include "protocol/transport/lanes.h"

#include <array>

namespace gossipd::protocol {
namespace {

// A NUL cannot start a member id: ids come from argv and config strings,
// which cannot carry one (ids are not otherwise checked), so no id is
// taken for a lane.
constexpr std::array<std::string_view, 2> kPrefixes{std::string_view("\0control:", 9),
                                                    std::string_view("\0reunion:", 9)};

std::string_view prefix(Lane lane) { return kPrefixes[static_cast<size_t>(lane)]; }

}  // namespace

std::string lane_name(Lane lane, std::string_view peer) {
  std::string name(prefix(lane));
  name += peer;
  return name;
}

std::string_view lane_peer(std::string_view name) {
  for (std::string_view p : kPrefixes)
    if (name.starts_with(p)) return name.substr(p.size());
  return name;
}

bool is_lane(std::string_view name) { return lane_peer(name).size() != name.size(); }

}  // namespace gossipd::protocol
