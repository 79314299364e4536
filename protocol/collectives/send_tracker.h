#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

namespace gossipd::protocol {

// Counts zero-copy sends per buffer slot until the transport releases them,
// so a collective never overwrites (or returns) memory still being sent.
class SendTracker {
 public:
  using Clock = std::chrono::steady_clock;

  explicit SendTracker(size_t slots);

  // An owner for OutFrame::borrowed: the slot stays busy until it is dropped.
  std::shared_ptr<const void> token(size_t slot);
  // False when the deadline passed first.
  bool wait(size_t slot, Clock::time_point deadline);
  bool wait_all(Clock::time_point deadline);
  // Without waiting: is the slot (are all slots) free?
  bool idle(size_t slot) const;
  bool all_idle() const;

 private:
  // Shared with the tokens: the transport may drop one after we are gone.
  struct State {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<size_t> busy;
    size_t total = 0;
  };
  std::shared_ptr<State> state_;
};

}  // namespace gossipd::protocol
