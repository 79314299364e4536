#include "tests/support/http_client.h"

#include <thread>

#include "daemon/http_client.h"

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

}  // namespace gossipd::testing
