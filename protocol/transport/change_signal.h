#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>

namespace gossipd::protocol {

// Tells waiters that something they watch has changed (a view, a label, a
// note from a peer), so that they wait on the change instead of sleeping in
// a loop and looking again. Whoever changes a watched fact calls notify()
// after the change; a waiter's condition is evaluated again after every
// notify, so one signal may serve several facts (a spurious wake-up costs
// one evaluation).
class ChangeSignal {
 public:
  using Clock = std::chrono::steady_clock;

  void notify();
  // True as soon as `ready()` holds; false when `deadline` passes or `stop`
  // is requested first. `ready` runs without this signal's lock held (it
  // may take the locks of the facts it reads).
  bool wait_until(const std::function<bool()>& ready, Clock::time_point deadline,
                  std::stop_token stop = {}) const;
  // How many changes were signalled so far.
  uint64_t generation() const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable_any cv_;
  uint64_t generation_ = 0;
};

}  // namespace gossipd::protocol
