#include "daemon/worker/view_watch.h"

#include <chrono>

namespace gossipd::daemon {

ViewWatch::ViewWatch(Membership& membership, std::function<bool(uint64_t)> left, uint64_t round,
                     std::stop_token outer)
    : membership_(membership),
      left_(std::move(left)),
      round_(round),
      forward_(outer, std::function<void()>([this] { source_.request_stop(); })) {
  thread_ = std::jthread([this](std::stop_token done) {
    const auto ever = std::chrono::steady_clock::now() + std::chrono::hours(24 * 365);  // `done` ends it
    if (membership_.wait_until([&] { return left_(round_.load()); }, ever, done)) {
      fired_.store(true);
      source_.request_stop();
    }
  });
}

ViewWatch::~ViewWatch() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gossipd::daemon
