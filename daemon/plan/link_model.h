#pragma once

#include <string>

namespace gossipd::daemon {

// The alpha-beta model of a link: a message of n bytes takes
// latency + n / bandwidth.
struct LinkModel {
  double latency_s = 0;
  double bytes_per_s = 0;
  double seconds(double messages, double bytes) const { return messages * latency_s + bytes / bytes_per_s; }
};

// "100mbit", "1gbit", "500kbit", "10gbit" (tc's units: bits per second) or
// a plain number of bits per second, as bytes per second. Throws
// std::invalid_argument naming the text and the forms it takes.
double parse_bandwidth(const std::string& text);

}  // namespace gossipd::daemon
