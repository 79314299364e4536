#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <stop_token>
#include <thread>

#include "daemon/cluster/membership.h"

namespace gossipd::daemon {

// Stops a group's collectives once the view for the round in flight leaves
// the group (AllReduce-SGD's ring, hierarchical Crossover-SGD's group): a
// member evicted (for silence, or as Byzantine) while the others wait on its
// pieces, or members that took a departure at different rounds and wait on
// groups of different shapes. Without it such a round waits out
// --timeout-ms. The group's collectives take token(); the worker's own stop
// reaches it too (then fired() is false).
class ViewWatch {
 public:
  // `left(round)`: whether the view for `round` leaves the group; called on
  // the watch's thread after every change of the membership's table.
  ViewWatch(Membership& membership, std::function<bool(uint64_t)> left, uint64_t round,
            std::stop_token outer);
  ~ViewWatch();
  ViewWatch(const ViewWatch&) = delete;
  ViewWatch& operator=(const ViewWatch&) = delete;

  std::stop_token token() const { return source_.get_token(); }
  // The round now in flight.
  void at_round(uint64_t round) { round_.store(round); }
  // Whether the watch stopped the group (the view left it).
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
