#include "daemon/cluster/share_queue.h"

namespace gossipd::daemon {

void ShareQueue::start() {
  thread_ = std::jthread([this](std::stop_token stop) {
    while (auto job = pop(stop)) send_(*job);
  });
}

void ShareQueue::stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

void ShareQueue::push(ShareTransfer t) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(t));
  }
  cv_.notify_one();
}

std::optional<ShareTransfer> ShareQueue::pop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  if (!cv_.wait(lock, stop, [&] { return !queue_.empty(); })) return std::nullopt;
  ShareTransfer job = std::move(queue_.front());
  queue_.pop_front();
  return job;
}

}  // namespace gossipd::daemon
