#include "daemon/ctl/compare_entry.h"

#include <algorithm>
#include <stdexcept>

#include "daemon/config/cli.h"
#include "daemon/worker/modes.h"

namespace gossipd::daemon {

std::string entry_dir(std::string label) {
  std::replace(label.begin(), label.end(), ':', '-');
  return label;
}

CompareEntry parse_compare_entry(const std::string& text) {
  CompareEntry e;
  e.label = text;
  const size_t colon = text.find(':');
  e.mode = text.substr(0, colon);
  if (e.mode == "grid") {
    if (colon == std::string::npos)
      throw UsageError("--algos grid needs its shape: grid:PRxPC, e.g. grid:4x2");
    try {
      e.grid = topology::parse_grid_shape(text.substr(colon + 1));
    } catch (const std::invalid_argument& err) {
      throw UsageError("--algos " + text + ": " + err.what());
    }
    return e;
  }
  std::string modes;
  for (const std::string& m : mode_names()) {
    if (m == e.mode && colon == std::string::npos) return e;
    modes += (modes.empty() ? "" : ", ") + (m == "grid" ? std::string("grid:PRxPC") : m);
  }
  throw UsageError("--algos " + text + " is not one of " + modes);
}

bool CompareEntry::one_replica() const { return find_mode(mode).one_replica; }

std::string compare_entry_error(const std::string& text) {
  try {
    parse_compare_entry(text);
    return "";
  } catch (const UsageError& e) {
    return e.what();
  }
}

}  // namespace gossipd::daemon
