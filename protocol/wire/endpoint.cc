#include "protocol/wire/endpoint.h"

#include <algorithm>
#include <cctype>

namespace gossipd::protocol {
namespace {

constexpr size_t kMaxHost = 253;     // a DNS name
constexpr size_t kMaxIpcPath = 107;  // sizeof(sockaddr_un::sun_path) - 1

bool host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '-' || c == '_';
}

std::string port_problem(std::string_view port, EndpointUse use) {
  if (use == EndpointUse::kBind && port == "*") return "";
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return "the port is not a number";
  }
  const int p = std::stoi(std::string(port));
  if (p > 65535) return "the port is above 65535";
  if (p == 0 && use == EndpointUse::kConnect) return "port 0 can only be bound";
  return "";
}

std::string tcp_problem(std::string_view rest, EndpointUse use) {
  std::string_view host;
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return "an [IPv6] host needs ]:PORT";
    }
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
    if (host.empty() || !std::all_of(host.begin(), host.end(), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == ':' || c == '.';
        })) {
      return "the [IPv6] host is not an address";
    }
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) return "no :PORT";
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.empty()) return "no host";
    if (host.size() > kMaxHost) return "the host name is too long";
    const bool any = use == EndpointUse::kBind && host == "*";
    if (!any && !std::all_of(host.begin(), host.end(), host_char))
      return "the host has characters no host name has";
  }
  return port_problem(port, use);
}

}  // namespace

std::string endpoint_problem(std::string_view e, EndpointUse use) {
  constexpr std::string_view kTcp = "tcp://";
  constexpr std::string_view kIpc = "ipc://";
  constexpr std::string_view kHub = "inproc-hub://";
  if (e.starts_with(kTcp)) return tcp_problem(e.substr(kTcp.size()), use);
  if (e.starts_with(kIpc)) {
    const auto path = e.substr(kIpc.size());
    if (path.empty()) return "no path";
    if (path.size() > kMaxIpcPath) return "the path is longer than 107 bytes";
    if (path.find('\0') != std::string_view::npos) return "the path holds a NUL byte";
    return "";
  }
  if (e.starts_with(kHub) && e.size() > kHub.size()) return "";
  return "use tcp://HOST:PORT or ipc://PATH";
}

}  // namespace gossipd::protocol
