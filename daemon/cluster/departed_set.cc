#include "daemon/cluster/departed_set.h"

namespace gossipd::daemon {

void DepartedSet::record(const std::string& id, uint64_t since_round) {
  if (capacity_ == 0) return;
  auto it = by_id_.find(id);
  if (it != by_id_.end()) {
    by_stamp_.erase(it->second.second);
  } else if (by_id_.size() >= capacity_) {
    const auto oldest = by_stamp_.begin();
    by_id_.erase(oldest->second);
    by_stamp_.erase(oldest);
  }
  by_id_[id] = {since_round, next_stamp_};
  by_stamp_[next_stamp_++] = id;
}

bool DepartedSet::left(const std::string& id, uint64_t since_round) const {
  auto it = by_id_.find(id);
  return it != by_id_.end() && it->second.first >= since_round;
}

}  // namespace gossipd::daemon
