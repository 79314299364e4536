#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace gossipd::testing {

// Sends raw bytes to 127.0.0.1:port and returns all the server answers
// ("" when the connection fails or is closed without an answer).
std::string http_exchange(uint16_t port, const std::string& request);

// GET path; returns the body of a 200 answer, "" otherwise.
std::string http_get(uint16_t port, const std::string& path);

// A number field of a /status JSON answer (quoted or not; 0 when absent).
uint64_t status_number(const std::string& status, const std::string& field);
// status_number(status, "round").
uint64_t round_of(const std::string& status);
// The value of one series of /metrics, named exactly as it is printed
// (`name` or `name{label="value"}`); -1 when absent.
double metric_value(uint16_t port, const std::string& series);
// How many ids the "members" list of a /status answer holds.
size_t member_count(const std::string& status);

// Polls `condition` every 20 ms until it holds or `timeout` passes.
bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout);

}  // namespace gossipd::testing
