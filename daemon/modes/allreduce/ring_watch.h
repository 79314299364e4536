#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <thread>

#include "daemon/cluster/membership.h"

namespace gossipd::daemon {

// Stops a ring's collectives once the view for the step in flight leaves
// the ring: a member evicted (for silence, or as Byzantine) while the others
// wait on its pieces, or members that took a departure at different steps
// and wait on rings of different shapes. Without it such a step waits out
// --timeout-ms before the ring re-forms. The ring's collectives take
// token(); the worker's own stop reaches it too (then fired() is false).
class RingWatch {
 public:
  // `left(round)`: whether the view for `round` leaves the ring; called on
  // the watch's thread after every change of the membership's table.
  RingWatch(Membership& membership, std::function<bool(uint64_t)> left, uint64_t round,
            std::stop_token outer);
  ~RingWatch();
  RingWatch(const RingWatch&) = delete;
  RingWatch& operator=(const RingWatch&) = delete;

  std::stop_token token() const { return source_.get_token(); }
  // The step now in flight.
  void at_round(uint64_t round) { round_.store(round); }
  // Whether the watch stopped the ring (its view left it).
  bool fired() const { return fired_.load(); }

 private:
  Membership& membership_;
  std::function<bool(uint64_t)> left_;
  std::atomic<uint64_t> round_;
  std::atomic<bool> fired_{false};
  std::stop_source source_;
  std::stop_callback<std::function<void()>> forward_;
  std::jthread thread_;
};

}  // namespace gossipd::daemon
