#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace gossipd::daemon {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Handler for GET requests: receives the path (query string stripped).
using HttpHandler = std::function<HttpResponse(const std::string& path)>;

// A small HTTP/1.1 server for /status and /metrics on its own Asio thread.
// One request per connection (Connection: close); a request line and headers
// larger than 8 KiB, or slower than 5 s, close the connection. Only GET is
// served; anything else gets 405.
class HttpServer {
 public:
  // `address` is "IP:PORT"; port 0 picks a free port (see port()).
  // Throws std::invalid_argument for a malformed address and
  // DaemonError (daemon/config/cli.h) when the address cannot be bound.
  HttpServer(const std::string& address, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Splits "IP:PORT" (IPv6 as "[::1]:PORT"); throws std::invalid_argument.
std::pair<std::string, uint16_t> split_host_port(const std::string& address);

}  // namespace gossipd::daemon
