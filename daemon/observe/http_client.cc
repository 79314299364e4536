#include "daemon/observe/http_client.h"

#include <array>
#include <asio.hpp>
#include <functional>

namespace gossipd::daemon {

// Connect, write, then read until the server closes, all within `timeout`:
// a server that accepts and never answers (a stopped process: the kernel
// still completes the handshake) is "" when the time is up, not a hang.
std::string http_exchange(const std::string& host, uint16_t port, const std::string& request,
                          std::chrono::milliseconds timeout) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  asio::error_code ec;
  asio::ip::tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return "";
  std::string out;
  bool closed = false;  // the server ended the answer (or the connection failed)
  std::array<char, 4096> buf{};
  std::function<void()> read_more = [&] {
    s.async_read_some(asio::buffer(buf), [&](asio::error_code e, size_t n) {
      out.append(buf.data(), n);
      if (e) {
        closed = true;
        return;
      }
      read_more();
    });
  };
  asio::async_connect(s, endpoints, [&](asio::error_code e, const asio::ip::tcp::endpoint&) {
    if (e) {
      closed = true;
      return;
    }
    asio::async_write(s, asio::buffer(request), [&](asio::error_code w, size_t) {
      if (w) {
        closed = true;
        return;
      }
      read_more();
    });
  });
  io.run_for(timeout);
  s.close(ec);  // what is still pending is dropped unread with the io_context
  return closed ? out : "";
}

std::string http_get(const std::string& host, uint16_t port, const std::string& path,
                     std::chrono::milliseconds timeout) {
  const std::string r =
      http_exchange(host, port, "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n", timeout);
  if (r.rfind("HTTP/1.1 200", 0) != 0) return "";
  const auto body = r.find("\r\n\r\n");
  return body == std::string::npos ? "" : r.substr(body + 4);
}

}  // namespace gossipd::daemon
