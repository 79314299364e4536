#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace gossipd::daemon {

// Whom SWIM probes next: every member once per pass, each pass in a fresh
// random order (SWIM's round-robin variant: a dead member is probed within
// one pass, at most n periods, instead of after a geometric wait). Members
// that joined since the pass began are probed in the next one; those gone
// are skipped.
class ProbeOrder {
 public:
  explicit ProbeOrder(uint64_t seed) : rng_(seed) {}
  // The next of `members` (this member's peers now); nullopt when there are
  // none. `members` is read only when a pass begins; `listed` says whether
  // one drawn earlier in the pass is still a member.
  std::optional<std::string> next(const std::vector<std::string>& members,
                                  const std::function<bool(const std::string&)>& listed);

 private:
  std::vector<std::string> pass_;
  size_t at_ = 0;
  std::mt19937_64 rng_;
};

// Up to `k` of `members` other than `except`, drawn at random (the members
// asked to probe `except` indirectly).
std::vector<std::string> draw_others(const std::vector<std::string>& members, const std::string& except,
                                     size_t k, std::mt19937_64& rng);

}  // namespace gossipd::daemon
