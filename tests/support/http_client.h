#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace gossipd::testing {

// Sends raw bytes to 127.0.0.1:port and returns all the server answers
// ("" when the connection fails or is closed without an answer).
std::string http_exchange(uint16_t port, const std::string& request);

// GET path; returns the body of a 200 answer, "" otherwise.
std::string http_get(uint16_t port, const std::string& path);

// Polls `condition` every 20 ms until it holds or `timeout` passes.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

}  // namespace gossipd::testing
