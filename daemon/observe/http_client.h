#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gossipd::daemon {

// How long a client of a member's HTTP server waits for the whole answer.
inline constexpr std::chrono::milliseconds kHttpTimeout{5000};

// Sends raw bytes to host:port and returns everything the server answers
// before closing; "" when the connection fails or the answer has not ended
// within `timeout` (a stopped member accepts and never answers).
std::string http_exchange(const std::string& host, uint16_t port, const std::string& request,
                          std::chrono::milliseconds timeout = kHttpTimeout);

// GET path; the body of a 200 answer, "" otherwise (as above).
std::string http_get(const std::string& host, uint16_t port, const std::string& path,
                     std::chrono::milliseconds timeout = kHttpTimeout);

}  // namespace gossipd::daemon
