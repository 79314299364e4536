#include "daemon/config/worker_values.h"

#include <algorithm>
#include <charconv>

#include "daemon/config/cli.h"

namespace gossipd::daemon {

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  for (size_t at = 0; at < text.size();) {
    const size_t comma = std::min(text.find(',', at), text.size());
    items.push_back(text.substr(at, comma - at));
    at = comma + 1;
  }
  return items;
}

std::map<size_t, std::string> worker_values(const std::string& text, const std::string& flag, int workers) {
  std::map<size_t, std::string> out;
  for (const std::string& item : comma_list(text)) {
    const size_t eq = item.find('=');
    size_t k = 0;
    const char* digits = item.data() + 1;
    const char* end = item.data() + std::min(eq, item.size());
    const bool named = eq != std::string::npos && item.size() > 1 && item[0] == 'w' &&
                       std::from_chars(digits, end, k).ptr == end && end > digits;
    if (!named)
      throw UsageError(flag + ": '" + item + "' is not WORKER=VALUE (e.g. w3=2.5); name workers w0 .. w" +
                       std::to_string(workers - 1));
    if (k >= static_cast<size_t>(workers))
      throw UsageError(flag + ": there is no worker " + item.substr(0, eq) + " among --workers " +
                       std::to_string(workers) + " (w0 .. w" + std::to_string(workers - 1) + ")");
    out[k] = item.substr(eq + 1);
  }
  return out;
}

}  // namespace gossipd::daemon
