#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace gossipd::daemon {

// SWIM's suspicion timers: the members suspected of having failed, each
// with the time it is evicted unless it refutes first (a higher
// incarnation, or any message from it). The first deadline of a suspicion
// holds: hearing the suspicion again does not postpone the eviction. Time
// is passed in, so the timers are read as of any instant.
class Suspicions {
 public:
  using Clock = std::chrono::steady_clock;

  // Suspects `id` until `deadline`; false (the deadline kept) when it is
  // suspected already.
  bool mark(const std::string& id, Clock::time_point deadline);
  // The suspicion of `id` ends (it refuted, spoke, or left the table).
  void refute(const std::string& id) { deadlines_.erase(id); }
  // Every suspicion ends (start-up's silence is held against nobody).
  void clear() { deadlines_.clear(); }
  bool suspected(const std::string& id) const { return deadlines_.count(id) > 0; }
  // The suspects whose deadline is `now` or past, in id order. They stay
  // suspected until refuted: the caller evicts them.
  std::vector<std::string> expired(Clock::time_point now) const;
  // Moves every deadline `late` on: this member did not run for that long,
  // and its silence is not held against the suspects.
  void postpone(Clock::duration late);
  size_t size() const { return deadlines_.size(); }

 private:
  std::map<std::string, Clock::time_point> deadlines_;
};

}  // namespace gossipd::daemon
