#include "daemon/observe/http_client.h"

#include <asio.hpp>

namespace gossipd::daemon {

std::string http_exchange(const std::string& host, uint16_t port, const std::string& request) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  asio::error_code ec;
  asio::ip::tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return "";
  asio::connect(s, endpoints, ec);
  if (ec) return "";
  asio::write(s, asio::buffer(request), ec);
  std::string out;
  char buf[4096];
  while (!ec) {
    const size_t n = s.read_some(asio::buffer(buf), ec);
    out.append(buf, n);
  }
  return out;
}

std::string http_get(const std::string& host, uint16_t port, const std::string& path) {
  const std::string r = http_exchange(host, port, "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
  if (r.rfind("HTTP/1.1 200", 0) != 0) return "";
  const auto body = r.find("\r\n\r\n");
  return body == std::string::npos ? "" : r.substr(body + 4);
}

}  // namespace gossipd::daemon
