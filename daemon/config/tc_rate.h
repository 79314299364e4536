#pragma once

#include <string>

namespace gossipd::daemon {

// A tc rate: bits (bit) or bytes (bps) per second with an SI prefix, e.g.
// 100mbit, 1gbit, 12500kbps (what tc's tbf and htb take).
bool is_tc_rate(const std::string& rate);

// The rate in bytes per second; throws UsageError if `rate` is not a tc rate.
double tc_rate_bytes_per_second(const std::string& rate);

}  // namespace gossipd::daemon
