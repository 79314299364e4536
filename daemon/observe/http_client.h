#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gossipd::daemon {

// Sends raw bytes to host:port and returns everything the server answers
// before closing ("" when the connection fails).
std::string http_exchange(const std::string& host, uint16_t port, const std::string& request);

// GET path; the body of a 200 answer, "" otherwise.
std::string http_get(const std::string& host, uint16_t port, const std::string& path);

}  // namespace gossipd::daemon
