#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace gossipd::daemon {

// Lifeguard's local health (Dega, Gupta, Mair 2018; memberlist's
// awareness): how far this member trusts its own sense of time. A score
// from 0 to `max`, up by one for each sign that the member itself is slow
// (a probe of its own unanswered, a suspicion of itself refuted, a period
// of its own that came late), down by one for each probe answered. Timers
// scaled by it stretch by (1 + score): a member too slow to hear its
// peers' answers in time probes less and suspects fewer of them, rather
// than the cluster evicting them for its own slowness. `max` 0 keeps it
// off (the score stays 0).
class LocalHealth {
 public:
  explicit LocalHealth(size_t max) : max_(max) {}

  // +1 or -1 (any positive or negative delta counts as one step); the score
  // stays within [0, max].
  void adjust(int delta);
  size_t score() const { return score_; }
  // `period` stretched by (1 + score).
  std::chrono::milliseconds scale(std::chrono::milliseconds period) const {
    return period * static_cast<int64_t>(1 + score_);
  }

 private:
  size_t max_;
  size_t score_ = 0;
};

}  // namespace gossipd::daemon
