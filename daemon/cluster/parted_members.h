#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gossipd::daemon {

// The members this one evicted for silence, which may be a partition's
// other side: each one's endpoint, kept for `window` (at most `capacity` of
// them), and which one to look for next, round robin (a REUNION goes to one
// each period: membership_reunion.cc). It sends nothing and reads no clock.
class PartedMembers {
 public:
  using Clock = std::chrono::steady_clock;
  struct Next {
    std::string id;
    std::string endpoint;
  };

  PartedMembers(size_t capacity, Clock::duration window) : capacity_(capacity), window_(window) {}

  // `id` at `endpoint` was evicted for silence `now` (ignored when full).
  void evicted(const std::string& id, const std::string& endpoint, Clock::time_point now);
  // Forgets those back in the table (`listed`) or evicted longer than the
  // window ago; returns their ids.
  std::vector<std::string> forget(Clock::time_point now,
                                  const std::function<bool(const std::string&)>& listed);
  // The one to look for next, after the one looked for last; nullopt when none.
  std::optional<Next> next();
  // The endpoint of `id`, when it is one of them.
  std::optional<std::string> endpoint(const std::string& id) const;
  // Their endpoints, `first`'s first: where a member cut off may enter again.
  std::vector<std::string> contacts(const std::string& first) const;
  size_t size() const { return parted_.size(); }

 private:
  struct Parted {
    std::string endpoint;
    Clock::time_point since;
  };
  size_t capacity_;
  Clock::duration window_;
  std::map<std::string, Parted> parted_;
  std::string next_;  // the last one looked for
};

}  // namespace gossipd::daemon
