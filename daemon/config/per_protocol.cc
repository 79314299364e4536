#include "daemon/config/per_protocol.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "daemon/config/cli.h"

namespace gossipd::daemon {

std::string per_protocol_value(const std::string& flag, const std::string& spec, const std::string& algo,
                               const std::vector<std::string>& algos, const std::string& fallback) {
  if (spec.empty()) return fallback;
  std::map<std::string, std::string> named;
  std::string bare;
  bool has_bare = false;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t eq = item.find('=');
    const std::string name = eq == std::string::npos ? "" : item.substr(0, eq);
    const std::string value = eq == std::string::npos ? item : item.substr(eq + 1);
    if (value.empty()) throw UsageError(flag + " '" + spec + "': an item without a value");
    if (eq == std::string::npos) {
      if (has_bare)
        throw UsageError(flag + " '" + spec + "': two values for every protocol; name ALGO=VALUE");
      has_bare = true, bare = value;
      continue;
    }
    if (std::find(algos.begin(), algos.end(), name) == algos.end())
      throw UsageError(flag + " '" + spec + "': '" + name + "' is not a protocol (--algo)");
    if (!named.emplace(name, value).second)
      throw UsageError(flag + " '" + spec + "': " + name + " is named twice");
  }
  if (spec.back() == ',') throw UsageError(flag + " '" + spec + "': an empty item");
  if (const auto it = named.find(algo); it != named.end()) return it->second;
  return has_bare ? bare : fallback;
}

const std::vector<std::pair<std::string, std::string>>& per_protocol_flags() {
  static const std::vector<std::pair<std::string, std::string>> flags = {
      {"--compress", "none"}, {"--local-steps", "1"}, {"--outer-momentum", "0"}, {"--robust", "none"}};
  return flags;
}

std::string checked_outer_momentum(const std::string& value) {
  size_t used = 0;
  double m = -1;
  try {
    m = std::stod(value, &used);
  } catch (const std::exception&) {
  }
  if (used != value.size() || !(m >= 0.0 && m < 1.0))
    throw UsageError("--outer-momentum '" + value + "': a momentum in [0, 1)");
  return value;
}

std::string checked_local_steps(const std::string& value) {
  if (value.empty() || value.size() > 6 || value.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(value) == 0)
    throw UsageError("--local-steps '" + value + "': a number of steps, 1 or more");
  return value;
}

}  // namespace gossipd::daemon
