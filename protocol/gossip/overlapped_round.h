#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "protocol/gossip/crossover.h"

namespace gossipd::protocol {

// Runs gossip rounds on their own thread so that communication overlaps the
// next step's computation. A round mixes a snapshot of the parameters taken
// when it starts; its result comes back one step late as a correction,
//   params += mixed(snapshot) − snapshot,
// so the local progress made meanwhile is kept. For a doubly stochastic
// round (Crossover-SGD) the corrections of all members sum to zero, so the
// mean of the replicas is preserved exactly as without overlap.
class OverlappedRound {
 public:
  using RoundFn = std::function<RoundStats(uint64_t round, std::span<float> params)>;

  explicit OverlappedRound(RoundFn round);
  ~OverlappedRound();  // waits for a round in flight
  OverlappedRound(const OverlappedRound&) = delete;
  OverlappedRound& operator=(const OverlappedRound&) = delete;

  // Applies the previous round's correction to `params` (waiting for it if
  // it is still running) and returns its stats; then starts `round` on a
  // snapshot of `params`. Rethrows what the previous round threw.
  RoundStats exchange(uint64_t round, std::span<float> params);
  // Applies the last round's correction, if one is in flight.
  RoundStats drain(std::span<float> params);

 private:
  void loop(std::stop_token stop);
  RoundStats collect(std::span<float> params);

  RoundFn round_;
  std::vector<float> snapshot_, mixed_;
  std::mutex mutex_;
  std::condition_variable_any cv_;
  bool pending_ = false;  // a round was started and not yet collected
  bool running_ = false;  // the thread is working on it
  uint64_t next_round_ = 0;
  RoundStats stats_;
  std::exception_ptr error_;
  std::jthread thread_;
};

}  // namespace gossipd::protocol
