#pragma once

#include <string>

namespace gossipd::daemon {

// The alpha-beta model of a link: a message of n bytes takes
// latency + n / bandwidth.
struct LinkModel {
  double latency_s = 0;
  double bytes_per_s = 0;
  // The processor time a transfer takes at each end, bytes per second (0:
  // none priced). Over loopback the link is a copy on both sides: the
  // pipeline planner adds it to the stages' compute.
  double copy_bytes_per_s = 0;
  double seconds(double messages, double bytes) const { return messages * latency_s + bytes / bytes_per_s; }
};

// Two processes on one host over loopback, as a training run sees it: a
// ring allreduce of 28 MB of gradients between two processes that each
// train on a core took 18 ms (the MLP 784-1024x7-10, 2-core machine), and
// 16 us is a small message's round trip.
constexpr LinkModel kLoopback{8e-6, 1.5e9, 1.5e9};

// Two processes on one host through shared memory (gossipd's default
// there, protocol/README.md): the same 28 MB exchange, both cores
// training, took 9.2 ms a step against the 19.5 kLoopback priced (the MLP
// planned 1x2 measured 100.8 ms, predicted 111.1; tests/bench/README.md),
// and an 8-byte message goes one way in about 1 us when idle.
constexpr LinkModel kSharedMemory{2e-6, 3.2e9, 3.2e9};

// "100mbit", "1gbit", "500kbit", "10gbit" (tc's units: bits per second) or
// a plain number of bits per second, as bytes per second. Throws
// std::invalid_argument naming the text and the forms it takes.
double parse_bandwidth(const std::string& text);

}  // namespace gossipd::daemon
