#include "protocol/gossip/overlapped_round.h"

#include <algorithm>

namespace gossipd::protocol {

OverlappedRound::OverlappedRound(RoundFn round)
    : round_(std::move(round)), thread_([this](std::stop_token stop) { loop(stop); }) {}

OverlappedRound::~OverlappedRound() {
  thread_.request_stop();
  cv_.notify_all();
}

void OverlappedRound::loop(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, stop, [&] { return running_; });
    if (stop.stop_requested()) return;
    const uint64_t round = next_round_;
    lock.unlock();
    RoundStats stats;
    std::exception_ptr error;
    try {
      stats = round_(round, mixed_);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    stats_ = stats;
    error_ = error;
    running_ = false;
    cv_.notify_all();
  }
}

RoundStats OverlappedRound::collect(std::span<float> params) {
  std::unique_lock lock(mutex_);
  if (!pending_) return {};
  cv_.wait(lock, [&] { return !running_; });
  pending_ = false;
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  for (size_t i = 0; i < params.size(); ++i) params[i] += mixed_[i] - snapshot_[i];
  return stats_;
}

RoundStats OverlappedRound::exchange(uint64_t round, std::span<float> params) {
  RoundStats previous = collect(params);
  std::lock_guard lock(mutex_);
  snapshot_.assign(params.begin(), params.end());
  mixed_ = snapshot_;
  next_round_ = round;
  pending_ = running_ = true;
  cv_.notify_all();
  return previous;
}

RoundStats OverlappedRound::drain(std::span<float> params) { return collect(params); }

}  // namespace gossipd::protocol
