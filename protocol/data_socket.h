#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace gossipd::protocol {

// A file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// A non-blocking TCP listener on `host` (an IPv4 address, "*" or
// "0.0.0.0" for every interface), port chosen by the kernel. Throws
// ProtocolConfigError naming the host when it cannot bind.
Fd listen_tcp(const std::string& host, uint16_t* port);

// Connects to host:port before the deadline; returns a connected,
// non-blocking socket or an empty Fd (and the reason in *why).
Fd connect_tcp(const std::string& host, uint16_t port, std::chrono::steady_clock::time_point deadline,
               std::string* why);

// Non-blocking, TCP_NODELAY, send and receive buffers of `buffer_bytes`.
void tune_data_socket(int fd, int buffer_bytes);

// The host part of "tcp://HOST:PORT" ("" when it has none).
std::string endpoint_host(const std::string& endpoint);

}  // namespace gossipd::protocol
