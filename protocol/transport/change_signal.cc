#include "protocol/transport/change_signal.h"

namespace gossipd::protocol {

void ChangeSignal::notify() {
  {
    std::lock_guard lock(mu_);
    ++generation_;
  }
  cv_.notify_all();
}

uint64_t ChangeSignal::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

bool ChangeSignal::wait_until(const std::function<bool()>& ready, Clock::time_point deadline,
                              std::stop_token stop) const {
  for (;;) {
    // The generation is read before the condition: a change made while
    // `ready` runs moves it on, so the wait below returns at once.
    const uint64_t seen = generation();
    if (ready()) return true;
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, stop, deadline, [&] { return generation_ != seen; })) {
      lock.unlock();
      return ready();  // the deadline or stop came first: one last look
    }
  }
}

}  // namespace gossipd::protocol
