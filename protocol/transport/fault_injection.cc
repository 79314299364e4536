#include "protocol/transport/fault_injection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "protocol/transport/lanes.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

using Clock = std::chrono::steady_clock;

// The packets of a message of `bytes` over TCP (a 1448-byte payload each).
double tcp_packets(size_t bytes) { return std::ceil(static_cast<double>(bytes + 1) / 1448.0); }

}  // namespace

// A WAN link's part: the delay and jitter, a round trip more where a packet
// was lost, and never before the message sent ahead of it.
Clock::time_point FaultDice::over_link(const std::string& peer, size_t bytes, Clock::time_point due) {
  const auto it = options_.links.find(std::string(lane_peer(peer)));  // a lane: its peer's link
  if (it == options_.links.end()) return due;
  const LinkFault& l = it->second;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double jitter_us = static_cast<double>(l.jitter.count()) * (2 * u(rng_) - 1);
  due += l.delay + std::chrono::microseconds(static_cast<int64_t>(jitter_us));
  if (l.packet_loss > 0 && u(rng_) < 1 - std::pow(1 - l.packet_loss, tcp_packets(bytes))) {
    ++counts_.retransmitted;
    due += 2 * l.delay;
  }
  Clock::time_point& last = last_due_[peer];
  due = std::max(due, last);
  last = due;
  return due;
}

FaultDice::Roll FaultDice::roll(const std::string& peer, size_t bytes) {
  std::lock_guard lock(mu_);
  ++counts_.sent;
  Roll r;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const bool armed = armed_.load();
  if (armed && u(rng_) < options_.drop) {
    ++counts_.dropped;
    r.drop = true;
    return r;
  }
  r.due = over_link(peer, bytes, Clock::now() + options_.delay);
  if (armed && u(rng_) < options_.reorder) {
    ++counts_.reordered;
    r.due += options_.delay + std::chrono::milliseconds(10);
  }
  if (armed && u(rng_) < options_.duplicate) {
    ++counts_.duplicated;
    r.duplicate = true;
  }
  return r;
}

FaultCounts FaultDice::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

FaultInjectingTransport::FaultInjectingTransport(std::unique_ptr<Transport> inner, FaultDice& dice)
    : inner_(std::move(inner)), dice_(dice) {
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

FaultInjectingTransport::~FaultInjectingTransport() { close(); }

void FaultInjectingTransport::connect(const std::string& peer, const std::string& endpoint) {
  {
    std::lock_guard lock(mu_);
    peers_.insert(peer);
  }
  inner_->connect(peer, endpoint);
}

void FaultInjectingTransport::drop_held(const std::string& peer) {
  std::lock_guard lock(mu_);
  std::erase_if(held_, [&](const auto& entry) { return entry.second.peer == peer; });
}

void FaultInjectingTransport::disconnect(const std::string& peer) {
  {
    std::lock_guard lock(mu_);
    peers_.erase(peer);
  }
  drop_held(peer);
  inner_->disconnect(peer);
}

void FaultInjectingTransport::reset(const std::string& peer) {
  drop_held(peer);
  inner_->reset(peer);
}

void FaultInjectingTransport::hold(Clock::time_point due, Held h) {
  held_.emplace(Due{due, next_seq_++}, std::move(h));
}

void FaultInjectingTransport::send(const std::string& peer, std::vector<OutFrame> frames,
                                   std::chrono::milliseconds) {
  {
    std::lock_guard lock(mu_);
    if (!peers_.count(peer)) throw PeerGone(node_id(), peer);
    size_t bytes = 0;
    for (const OutFrame& f : frames) bytes += f.size;
    const FaultDice::Roll r = dice_.roll(peer, bytes);
    if (r.drop) return;                                // lost: its buffers are released here
    if (r.duplicate) hold(r.due, Held{peer, frames});  // the copy shares the owners of the bytes
    hold(r.due, Held{peer, std::move(frames)});
  }
  cv_.notify_one();
}

void FaultInjectingTransport::loop(std::stop_token stop) {
  std::unique_lock lock(mu_);
  while (!stop.stop_requested()) {
    if (held_.empty()) {
      cv_.wait(lock, stop, [&] { return !held_.empty(); });
      continue;
    }
    const auto due = held_.begin()->first.first;
    if (Clock::now() < due) {
      // Woken early by a send: it may be due sooner (no delay) than the head.
      cv_.wait_until(lock, stop, due, [&] { return held_.empty() || held_.begin()->first.first < due; });
      continue;
    }
    Held h = std::move(held_.begin()->second);
    held_.erase(held_.begin());
    lock.unlock();
    try {
      inner_->send(h.peer, std::move(h.frames), std::chrono::milliseconds(1000));
    } catch (const std::exception& e) {
      spdlog::debug("node '{}': held message to '{}' lost: {}", inner_->node_id(), h.peer, e.what());
    }
    lock.lock();
  }
}

void FaultInjectingTransport::close() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  // What is still held was delayed or reordered, not lost (losing is the
  // drop fault's): it goes out now, in its order, before the sockets close.
  decltype(held_) held;
  {
    std::lock_guard lock(mu_);
    held.swap(held_);
  }
  for (auto& [due, h] : held) {
    try {
      inner_->send(h.peer, std::move(h.frames), std::chrono::milliseconds(100));
    } catch (const std::exception& e) {
      spdlog::debug("node '{}': held message to '{}' lost at close: {}", inner_->node_id(), h.peer, e.what());
    }
  }
  inner_->close();
}

}  // namespace gossipd::protocol
