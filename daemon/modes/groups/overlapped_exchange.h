#pragma once

#include <cstdint>
#include <future>
#include <span>
#include <stop_token>
#include <utility>
#include <vector>

#include "daemon/modes/groups/shard_client.h"

namespace gossipd::daemon {

// --group-overlap: a group's push of step t's gradient and its pull of the
// fresh values run in the background while it computes step t + 1 on the
// parameters it has (the values of step t - 1's pull): one more step of
// staleness, which the owners count (their staleness mean rises by one).
// The member's slice of the gradient is copied out before the next step
// overwrites it; the fresh values land in a buffer of their own, taken into
// the parameters at the next step (then allgathered over the group's ring).
class OverlappedExchange {
 public:
  OverlappedExchange(ShardClient& client, size_t params);
  ~OverlappedExchange();  // waits for what is in flight (its errors dropped)
  OverlappedExchange(const OverlappedExchange&) = delete;
  OverlappedExchange& operator=(const OverlappedExchange&) = delete;

  // Starts step `step`'s exchange of `shards` (their gradient in `grads`,
  // whole-vector offsets `range`), copying that range of both out first
  // (`params`: what an owner with no values is seeded with).
  // The pushes say the gradient was computed on `computed_on` (the versions
  // the parameters held when it was: a step before the last pull's).
  void start(uint64_t step, float lr, std::pair<size_t, size_t> shards, std::pair<size_t, size_t> range,
             std::span<const float> grads, std::span<const float> params, std::vector<uint64_t> computed_on,
             std::stop_token stop);
  // Whether an exchange is in flight or done and not yet taken.
  bool pending() const { return in_flight_.valid(); }
  // Waits for the exchange started last and copies its fresh values into
  // `params` (the same range); rethrows its failure (nothing is copied then).
  void finish(std::span<float> params);

 private:
  ShardClient& client_;
  std::vector<float> grads_, fresh_;  // whole-vector sized; only the range is used
  std::pair<size_t, size_t> range_{0, 0};
  std::vector<uint64_t> computed_on_;
  std::future<void> in_flight_;
};

}  // namespace gossipd::daemon
