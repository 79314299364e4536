#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace gossipd::daemon {

// "w3=2.5,w7=4" as {worker index: value text} (gossipctl's per-worker
// flags: --stragglers, --slow-links, --inject-step-delay-ms). Throws
// UsageError naming `flag` for an item that is not wK=VALUE or a worker
// beyond `workers`.
std::map<size_t, std::string> worker_values(const std::string& text, const std::string& flag, int workers);

// "a,b,c" as its items ("" as none; "a,,b" keeps the empty one).
std::vector<std::string> comma_list(const std::string& text);

}  // namespace gossipd::daemon
