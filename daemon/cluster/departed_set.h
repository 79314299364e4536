#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace gossipd::daemon {

// Ids that left, each with the incarnation (since_round) that did, so that a
// stale member list cannot bring that incarnation back. Bounded: past
// `capacity` ids the one recorded longest ago is forgotten (a list that old
// has long stopped circulating; should one still come, the ghost it names is
// silent and the failure timeout evicts it again), so churn under fresh ids
// cannot grow a member's memory without bound.
class DepartedSet {
 public:
  explicit DepartedSet(size_t capacity) : capacity_(capacity) {}
  // `id`'s incarnation `since_round` left (a later record of an id counts as new).
  void record(const std::string& id, uint64_t since_round);
  // True when this incarnation of `id`, or a later one, was seen leaving.
  bool left(const std::string& id, uint64_t since_round) const;
  size_t size() const { return by_id_.size(); }

 private:
  size_t capacity_;
  uint64_t next_stamp_ = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> by_id_;  // id -> (since_round, stamp)
  std::map<uint64_t, std::string> by_stamp_;                    // stamp -> id, oldest first
};

}  // namespace gossipd::daemon
