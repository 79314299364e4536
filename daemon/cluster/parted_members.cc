#include "daemon/cluster/parted_members.h"

namespace gossipd::daemon {

void PartedMembers::evicted(const std::string& id, const std::string& endpoint, Clock::time_point now) {
  if (parted_.size() < capacity_) parted_[id] = Parted{endpoint, now};
}

std::vector<std::string> PartedMembers::forget(Clock::time_point now,
                                               const std::function<bool(const std::string&)>& listed) {
  std::vector<std::string> out;
  for (auto it = parted_.begin(); it != parted_.end();) {  // back in the view, or gone too long
    if (listed(it->first) || now - it->second.since > window_) {
      out.push_back(it->first);
      it = parted_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::optional<PartedMembers::Next> PartedMembers::next() {
  if (parted_.empty()) return std::nullopt;
  auto it = parted_.upper_bound(next_);
  if (it == parted_.end()) it = parted_.begin();
  next_ = it->first;
  return Next{it->first, it->second.endpoint};
}

std::optional<std::string> PartedMembers::endpoint(const std::string& id) const {
  auto it = parted_.find(id);
  if (it == parted_.end()) return std::nullopt;
  return it->second.endpoint;
}

std::vector<std::string> PartedMembers::contacts(const std::string& first) const {
  std::vector<std::string> out;
  if (auto e = endpoint(first)) out.push_back(*e);
  for (const auto& [id, p] : parted_) {
    if (id != first) out.push_back(p.endpoint);
  }
  return out;
}

}  // namespace gossipd::daemon
