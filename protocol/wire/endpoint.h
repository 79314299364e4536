#pragma once

#include <string>
#include <string_view>

namespace gossipd::protocol {

// What an endpoint is for: a worker binds its own (`tcp://*:0` allowed) and
// connects to its peers' (a host and a port 1-65535).
enum class EndpointUse { kBind, kConnect };

// "" when `e` is an endpoint gossipd can use that way: tcp://HOST:PORT
// (HOST a name, an IPv4 address or [IPv6]), ipc://PATH (at most 107 bytes,
// the socket path limit), or inproc-hub://ID (the in-process test
// transport). Otherwise what is wrong, in a few words. Checked on flags and
// on every endpoint a message carries, before it reaches the transport
// (ZeroMQ throws on a malformed one).
std::string endpoint_problem(std::string_view e, EndpointUse use);

}  // namespace gossipd::protocol
