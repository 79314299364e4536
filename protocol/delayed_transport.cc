#include "protocol/delayed_transport.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "protocol/errors.h"

namespace gossipd::protocol {

DelayedTransport::DelayedTransport(std::unique_ptr<Transport> inner, std::chrono::milliseconds delay)
    : inner_(std::move(inner)), delay_(delay) {
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

DelayedTransport::~DelayedTransport() { close(); }

void DelayedTransport::connect(const std::string& peer, const std::string& endpoint) {
  {
    std::lock_guard lock(mu_);
    peers_.insert(peer);
  }
  inner_->connect(peer, endpoint);
}

void DelayedTransport::drop_held(const std::string& peer) {
  std::lock_guard lock(mu_);
  std::erase_if(held_, [&](const Held& h) { return h.peer == peer; });
}

void DelayedTransport::disconnect(const std::string& peer) {
  {
    std::lock_guard lock(mu_);
    peers_.erase(peer);
  }
  drop_held(peer);
  inner_->disconnect(peer);
}

void DelayedTransport::reset(const std::string& peer) {
  drop_held(peer);
  inner_->reset(peer);
}

void DelayedTransport::send(const std::string& peer, std::vector<OutFrame> frames, std::chrono::milliseconds) {
  {
    std::lock_guard lock(mu_);
    if (!peers_.count(peer)) throw PeerGone(node_id(), peer);
    held_.push_back(Held{std::chrono::steady_clock::now() + delay_, peer, std::move(frames)});
  }
  cv_.notify_one();
}

void DelayedTransport::loop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    if (held_.empty()) {
      cv_.wait(lock, stop, [&] { return !held_.empty(); });
      continue;
    }
    const auto due = held_.front().due;
    if (std::chrono::steady_clock::now() < due) {
      cv_.wait_until(lock, stop, due, [] { return false; });
      continue;
    }
    Held h = std::move(held_.front());
    held_.pop_front();
    lock.unlock();
    try {
      inner_->send(h.peer, std::move(h.frames), std::chrono::milliseconds(1000));
    } catch (const std::exception& e) {
      spdlog::debug("node '{}': delayed message to '{}' dropped: {}", inner_->node_id(), h.peer, e.what());
    }
    lock.lock();
  }
}

void DelayedTransport::close() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(mu_);
    held_.clear();
  }
  inner_->close();
}

}  // namespace gossipd::protocol
