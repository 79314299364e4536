#include "tests/support/http_client.h"

#include <algorithm>
#include <regex>
#include <thread>

#include "daemon/observe/http_client.h"

namespace gossipd::testing {

std::string http_exchange(uint16_t port, const std::string& request) {
  return daemon::http_exchange("127.0.0.1", port, request);
}

std::string http_get(uint16_t port, const std::string& path) { return daemon::http_get("127.0.0.1", port, path); }

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

uint64_t status_number(const std::string& status, const std::string& field) {
  std::smatch m;
  return std::regex_search(status, m, std::regex("\"" + field + "\":\"?([0-9]+)")) ? std::stoull(m[1]) : 0;
}

uint64_t round_of(const std::string& status) { return status_number(status, "round"); }

double metric_value(uint16_t port, const std::string& series) {
  const std::string m = http_get(port, "/metrics");
  const std::string prefix = series + " ";
  for (size_t at = 0; at < m.size();) {
    const size_t end = std::min(m.find('\n', at), m.size());
    if (m.compare(at, prefix.size(), prefix) == 0) return std::stod(m.substr(at + prefix.size(), end - at));
    at = end + 1;
  }
  return -1;
}

size_t member_count(const std::string& status) {
  std::smatch m;
  if (!std::regex_search(status, m, std::regex("\"members\":\\[([^\\]]*)\\]"))) return 0;
  const std::string list = m[1];
  return static_cast<size_t>(std::count(list.begin(), list.end(), '"')) / 2;
}

}  // namespace gossipd::testing
