#include "protocol/transport/inbound_connections.h"

#include <algorithm>
#include <set>

namespace gossipd::protocol {

InboundConnections::InboundConnections(size_t bound, std::chrono::milliseconds ask_again)
    : bound_(bound), ask_again_(ask_again) {}

void InboundConnections::accepted(int fd, Clock::time_point now) {
  by_fd_.try_emplace(fd, Connection{"", now});
  count_.store(by_fd_.size(), std::memory_order_relaxed);
}

void InboundConnections::disconnected(int fd) {
  by_fd_.erase(fd);
  count_.store(by_fd_.size(), std::memory_order_relaxed);
}

void InboundConnections::received(int fd, const std::string& node, Clock::time_point now, bool once) {
  if (fd < 0) return;  // a message without its descriptor (not from a socket)
  Connection& c = by_fd_[fd];
  c.node = node;
  c.last = now;
  c.once = once;
  count_.store(by_fd_.size(), std::memory_order_relaxed);
}

bool InboundConnections::asked_recently(const Connection& c, Clock::time_point now) const {
  return c.asked != Clock::time_point{} && now - c.asked < ask_again_;
}

std::vector<std::string> InboundConnections::to_close(Clock::time_point now) {
  if (bound_ == 0 || by_fd_.size() <= bound_) return {};
  size_t pending = 0;
  std::vector<std::pair<Clock::time_point, int>> candidates;  // (last message, fd)
  for (const auto& [fd, c] : by_fd_) {
    if (c.once || asked_recently(c, now)) {
      ++pending;
    } else if (!c.node.empty()) {
      candidates.emplace_back(c.last, fd);
    }
  }
  if (by_fd_.size() <= bound_ + pending) return {};
  size_t wanted = by_fd_.size() - bound_ - pending;
  std::sort(candidates.begin(), candidates.end());
  std::vector<std::string> out;
  std::set<std::string> named;
  // A member named once closes its newest connection; its older ones are
  // closing already (it opened the newest after closing them), so all of its
  // connections count as asked.
  size_t marked = 0;
  for (const auto& [last, fd] : candidates) {
    if (marked == wanted) break;
    Connection& c = by_fd_.at(fd);
    c.asked = now;
    ++marked;
    if (named.insert(c.node).second) out.push_back(c.node);
  }
  return out;
}

}  // namespace gossipd::protocol
