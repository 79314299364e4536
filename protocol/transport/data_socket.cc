#include "protocol/transport/data_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;

struct AddrInfoDeleter {
  void operator()(addrinfo* a) const { ::freeaddrinfo(a); }
};
using AddrInfo = std::unique_ptr<addrinfo, AddrInfoDeleter>;

// "[::1]" -> "::1"; "*" -> nullptr (every interface).
const char* lookup_host(const std::string& host, std::string& storage) {
  if (host.empty() || host == "*") return nullptr;
  storage = host;
  if (storage.size() > 2 && storage.front() == '[' && storage.back() == ']')
    storage = storage.substr(1, storage.size() - 2);
  return storage.c_str();
}

AddrInfo resolve(const std::string& host, uint16_t port, bool passive, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  std::string storage;
  addrinfo* out = nullptr;
  const int rc = ::getaddrinfo(lookup_host(host, storage), std::to_string(port).c_str(), &hints, &out);
  if (rc != 0) {
    *why = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return nullptr;
  }
  return AddrInfo(out);
}

uint16_t bound_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Waits for a non-blocking connect to finish; "" on success.
std::string finish_connect(int fd, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return "connect timed out";
    pollfd p{fd, POLLOUT, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 100)));
    if (n < 0 && errno != EINTR) return std::strerror(errno);
    if (n <= 0) continue;
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    return err == 0 ? "" : std::strerror(err);
  }
}

}  // namespace

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Fd listen_tcp(const std::string& host, uint16_t* port) {
  std::string why;
  const AddrInfo ai = resolve(host == "0.0.0.0" ? "*" : host, 0, true, &why);
  if (!ai) throw ProtocolConfigError("data path: " + why);
  for (const addrinfo* a = ai.get(); a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) continue;
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), 128) != 0) {
      why = std::strerror(errno);
      continue;
    }
    set_nonblocking(fd.get());
    *port = bound_port(fd.get());
    return fd;
  }
  throw ProtocolConfigError("data path: cannot listen on '" + host + "': " + why);
}

Fd connect_tcp(const std::string& host, uint16_t port, Clock::time_point deadline, std::string* why) {
  const AddrInfo ai = resolve(host, port, false, why);
  if (!ai) return Fd();
  for (const addrinfo* a = ai.get(); a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
    if (!fd) continue;
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      *why = std::strerror(errno);
      continue;
    }
    *why = finish_connect(fd.get(), deadline);
    if (why->empty()) return fd;
  }
  if (why->empty()) *why = "no address";
  return Fd();
}

namespace {

bool set_congestion(int fd, const std::string& name) {
  return ::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) == 0;
}

}  // namespace

void tune_data_socket(int fd, const DataSocketTuning& tuning) {
  set_nonblocking(fd);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (tuning.buffer_bytes > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &tuning.buffer_bytes, sizeof(tuning.buffer_bytes));
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tuning.buffer_bytes, sizeof(tuning.buffer_bytes));
  }
  if (!tuning.congestion.empty()) set_congestion(fd, tuning.congestion);
}

std::string congestion_refusal(const std::string& name) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return std::string("no socket: ") + std::strerror(errno);
  return set_congestion(fd.get(), name) ? "" : std::strerror(errno);
}

std::string endpoint_host(const std::string& endpoint) {
  const auto scheme = endpoint.find("://");
  if (scheme == std::string::npos) return "";
  const std::string rest = endpoint.substr(scheme + 3);
  const auto colon = rest.rfind(':');
  return colon == std::string::npos ? "" : rest.substr(0, colon);
}

std::string host_key(const std::string& endpoint) {
  const std::string host = endpoint_host(endpoint);
  return host.rfind("127.", 0) == 0 ? "127.0.0.1" : host;
}

bool same_host(const std::string& a, const std::string& b) {
  const std::string ka = host_key(a);
  return !ka.empty() && ka == host_key(b);
}

}  // namespace gossipd::protocol
