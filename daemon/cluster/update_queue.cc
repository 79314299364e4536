#include "daemon/cluster/update_queue.h"

#include <algorithm>
#include <cmath>

namespace gossipd::daemon {

void UpdateQueue::add(const proto::MemberUpdate& update) {
  // An accusation is kept beside what is said of the member's liveness: the
  // accused refuting a suspicion does not take it off the queue.
  std::string key = update.member().id();
  if (update.kind() == proto::MemberUpdate::ACCUSED) key.insert(0, 1, '\0');
  queued_[key] = Queued{update, 0, next_order_++};
}

std::vector<proto::MemberUpdate> UpdateQueue::take(size_t max, size_t limit) {
  std::vector<std::map<std::string, Queued>::iterator> order;
  order.reserve(queued_.size());
  for (auto it = queued_.begin(); it != queued_.end(); ++it) order.push_back(it);
  const size_t n = std::min(max, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [](const auto& a, const auto& b) {
                      return a->second.sent != b->second.sent ? a->second.sent < b->second.sent
                                                              : a->second.order > b->second.order;
                    });
  std::vector<proto::MemberUpdate> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(order[i]->second.update);
    if (++order[i]->second.sent >= limit) queued_.erase(order[i]);
  }
  return out;
}

size_t retransmit_limit(size_t members) {
  return 4 * static_cast<size_t>(std::ceil(std::log10(static_cast<double>(members) + 1.0)));
}

}  // namespace gossipd::daemon
