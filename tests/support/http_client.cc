#include "tests/support/http_client.h"

#include <asio.hpp>

#include <thread>

namespace gossipd::testing {

std::string http_exchange(uint16_t port, const std::string& request) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  asio::error_code ec;
  s.connect({asio::ip::make_address("127.0.0.1"), port}, ec);
  if (ec) return "";
  asio::write(s, asio::buffer(request), ec);
  std::string out;
  char buf[4096];
  while (!ec) {
    size_t n = s.read_some(asio::buffer(buf), ec);
    out.append(buf, n);
  }
  return out;
}

std::string http_get(uint16_t port, const std::string& path) {
  std::string r = http_exchange(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  if (r.rfind("HTTP/1.1 200", 0) != 0) return "";
  auto body = r.find("\r\n\r\n");
  return body == std::string::npos ? "" : r.substr(body + 4);
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace gossipd::testing
