#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>

namespace gossipd::daemon {

// --evict-byzantine: who named whom Byzantine. For each accused id, the
// distinct members that accused it (as the accusations that reached this
// member say), and whether it is banned: it reached the quorum, left the
// view and may not come back in this run. Bounded: accusations about ids
// beyond `capacity` are not kept (a cluster of max_members has no more
// members to accuse).
class Accusations {
 public:
  explicit Accusations(size_t capacity) : capacity_(capacity) {}
  // Adds `accuser` to those of `id`; true when it was not among them.
  bool add(const std::string& id, const std::string& accuser);
  // The members known to have accused `id`.
  const std::set<std::string>& of(const std::string& id) const;
  void ban(const std::string& id) { by_id_[id].banned = true; }
  bool banned(const std::string& id) const;

 private:
  struct Record {
    std::set<std::string> accusers;
    bool banned = false;
  };
  size_t capacity_;
  std::map<std::string, Record> by_id_;
};

}  // namespace gossipd::daemon
