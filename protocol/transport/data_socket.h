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

// The direct connections' TCP congestion control unless told otherwise:
// see DataSocketTuning::congestion.
inline constexpr const char* kDefaultCongestion = "reno";

// How direct data-path connections are set up in the kernel.
struct DataSocketTuning {
  // SO_SNDBUF/SO_RCVBUF; 0 leaves the kernel's autotuning.
  int buffer_bytes = 0;
  // TCP congestion control (TCP_CONGESTION); "" keeps the system's default.
  // Reno: a collective's transfers are bursts of a few MB between members
  // that wait for each other; on this project's machine (BBR by default)
  // the 2 x 2 MB allreduce took 605-768 us under BBR, 454-588 under Reno
  // (protocol/README.md, "Congestion control"). Every kernel has Reno and
  // lets any process pick it.
  std::string congestion = kDefaultCongestion;
};

// Non-blocking, TCP_NODELAY, then `tuning` (a congestion control the kernel
// refuses is left at the system's: see congestion_refusal).
void tune_data_socket(int fd, const DataSocketTuning& tuning);

// "" when a TCP socket takes the congestion control `name`, else the
// kernel's reason (not loaded, or not in net.ipv4.tcp_allowed_congestion_control
// for an unprivileged process).
std::string congestion_refusal(const std::string& name);

// The host part of "tcp://HOST:PORT" ("" when it has none).
std::string endpoint_host(const std::string& endpoint);

// The host an endpoint is on, as members on one host compare it: its host
// part, every loopback address (127.*) as one ("" when it has none).
std::string host_key(const std::string& endpoint);

// Whether two endpoints are on one host (host_key equal, not empty).
bool same_host(const std::string& a, const std::string& b);

}  // namespace gossipd::protocol
