#include "daemon/cluster/accusations.h"

namespace gossipd::daemon {

bool Accusations::add(const std::string& id, const std::string& accuser) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) {
    if (by_id_.size() >= capacity_) return false;
    it = by_id_.emplace(id, Record{}).first;
  }
  if (it->second.accusers.size() >= capacity_) return false;
  return it->second.accusers.insert(accuser).second;
}

const std::set<std::string>& Accusations::of(const std::string& id) const {
  static const std::set<std::string> none;
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? none : it->second.accusers;
}

bool Accusations::banned(const std::string& id) const {
  const auto it = by_id_.find(id);
  return it != by_id_.end() && it->second.banned;
}

}  // namespace gossipd::daemon
