#pragma once

// One plain, blocking TCP connection to 127.0.0.1:port, for tests that play
// a hostile client against a listener (junk, half messages, floods). Header
// only: the protocol tests and the daemon tests both use it.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace gossipd::testing {

class RawTcpClient {
 public:
  explicit RawTcpClient(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~RawTcpClient() { close(); }
  RawTcpClient(const RawTcpClient&) = delete;
  RawTcpClient& operator=(const RawTcpClient&) = delete;

  bool connected() const { return connected_; }
  // All of `bytes`, or false.
  bool send(std::span<const std::byte> bytes) {
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // What the other side did before `timeout`: sent a byte (its value, 0-255),
  // closed or reset the connection (kClosed), or neither (nullopt).
  static constexpr int kClosed = -1;
  std::optional<int> answer(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    unsigned char b = 0;
    return ::recv(fd_, &b, 1, MSG_DONTWAIT) == 1 ? std::optional<int>(b) : kClosed;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  bool connected_ = false;
};

}  // namespace gossipd::testing
