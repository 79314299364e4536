#pragma once

#include <cstdint>
#include <string>

#include "topology/view.h"

namespace gossipd::daemon {

// What the member that holds a Membership shares with it and hears from it
// (memberlist's Delegate): Membership runs SWIM, joins and the state share
// and knows nothing else of the member.
class MembershipDelegate {
 public:
  virtual ~MembershipDelegate() = default;
  // The member's pace in rounds per second (0: not known yet): a joiner is
  // admitted MembershipOptions::admit_ahead ahead, counted in rounds.
  virtual double rounds_per_second() const = 0;
  // Each view Membership publishes, with the view changes it has seen.
  virtual void view_published(const topology::View& view, uint32_t view_changes) = 0;
  // This member's group label, once known (--group auto: once measured).
  virtual void group_taken(const std::string& label) { (void)label; }
};

}  // namespace gossipd::daemon
