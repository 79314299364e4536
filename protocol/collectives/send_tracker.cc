#include "protocol/collectives/send_tracker.h"

namespace gossipd::protocol {

SendTracker::SendTracker(size_t slots) : state_(std::make_shared<State>()) { state_->busy.assign(slots, 0); }

std::shared_ptr<const void> SendTracker::token(size_t slot) {
  {
    std::lock_guard lock(state_->mutex);
    ++state_->busy.at(slot);
    ++state_->total;
  }
  auto state = state_;
  return std::shared_ptr<const void>(state.get(), [state, slot](const void*) {
    {
      std::lock_guard lock(state->mutex);
      --state->busy[slot];
      --state->total;
    }
    state->cv.notify_all();
  });
}

bool SendTracker::wait(size_t slot, Clock::time_point deadline) {
  std::unique_lock lock(state_->mutex);
  return state_->cv.wait_until(lock, deadline, [&] { return state_->busy.at(slot) == 0; });
}

bool SendTracker::wait_all(Clock::time_point deadline) {
  std::unique_lock lock(state_->mutex);
  return state_->cv.wait_until(lock, deadline, [&] { return state_->total == 0; });
}

bool SendTracker::idle(size_t slot) const {
  std::lock_guard lock(state_->mutex);
  return state_->busy.at(slot) == 0;
}

bool SendTracker::all_idle() const {
  std::lock_guard lock(state_->mutex);
  return state_->total == 0;
}

}  // namespace gossipd::protocol
