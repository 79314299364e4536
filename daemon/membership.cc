#include "daemon/membership.h"

#include <spdlog/spdlog.h>

#include <condition_variable>

namespace gossipd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

Membership::Membership(protocol::Node& node, const std::map<std::string, std::string>& peers,
                       MembershipOptions options, WorkerState& state, MetricsRegistry& metrics)
    : node_(node),
      options_(options),
      state_(state),
      members_gauge_(metrics.gauge("gossipd_members", "Members in the current view")),
      evictions_(metrics.counter("gossipd_members_evicted_total", "Members evicted after the failure timeout")) {
  const auto now = Clock::now();
  for (const auto& [id, endpoint] : peers) last_heard_[id] = now;
  publish();
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

Membership::~Membership() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

topology::View Membership::view() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> ids{node_.id()};
  for (const auto& [id, t] : last_heard_) ids.push_back(id);
  return topology::View(epoch_, std::move(ids));
}

void Membership::arm() {
  std::lock_guard lock(mu_);
  const auto now = Clock::now();
  for (auto& [id, t] : last_heard_) t = now;
  armed_ = true;
}

void Membership::publish() {
  const topology::View v = view();
  members_gauge_.set(static_cast<double>(v.size()));
  state_.update([&](proto::Status& s) {
    s.clear_members();
    for (const auto& m : v.members()) s.add_members(m);
    s.set_view_epoch(v.epoch());
  });
}

void Membership::drop(const std::string& id, const char* why) {
  {
    std::lock_guard lock(mu_);
    if (last_heard_.erase(id) == 0) return;
    ++epoch_;
  }
  node_.remove_peer(id);
  spdlog::warn("node '{}': member '{}' {}; {} members remain", node_.id(), id, why, view().size());
  publish();
}

void Membership::loop(std::stop_token stop) {
  std::mutex sleep_mu;
  std::condition_variable_any sleep_cv;
  while (!stop.stop_requested()) {
    std::vector<std::string> peers;
    {
      std::lock_guard lock(mu_);
      for (const auto& [id, t] : last_heard_) peers.push_back(id);
    }
    for (const auto& p : peers) {
      try {
        node_.transport().send(p, {protocol::envelope_frame(node_.envelope(proto::HEARTBEAT))},
                               std::chrono::milliseconds(0));
      } catch (const std::exception&) {
        // A full queue to a silent peer: the failure timeout deals with it.
      }
    }
    const auto now = Clock::now();
    while (auto m = node_.mailbox().pop(proto::HEARTBEAT, now, {})) {
      std::lock_guard lock(mu_);
      auto it = last_heard_.find(m->envelope.sender());
      if (it != last_heard_.end()) it->second = now;
    }
    while (auto m = node_.mailbox().pop(proto::LEAVE, now, {})) drop(m->envelope.sender(), "left");
    std::vector<std::string> silent;
    {
      std::lock_guard lock(mu_);
      for (const auto& [id, t] : last_heard_) {
        if (armed_ && now - t > options_.failure_timeout) silent.push_back(id);
      }
    }
    for (const auto& id : silent) {
      evictions_.add();
      drop(id, "evicted (silent past the failure timeout)");
    }
    std::unique_lock lock(sleep_mu);
    sleep_cv.wait_for(lock, stop, options_.heartbeat_interval, [] { return false; });
  }
}

void Membership::leave() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  proto::Envelope env = node_.envelope(proto::LEAVE);
  env.mutable_leave()->set_reason("shutdown");
  const topology::View current = view();
  for (const auto& id : current.members()) {
    if (id == node_.id()) continue;
    try {
      node_.transport().send(id, {protocol::envelope_frame(env)}, std::chrono::milliseconds(100));
    } catch (const std::exception&) {
    }
  }
}

}  // namespace gossipd::daemon
