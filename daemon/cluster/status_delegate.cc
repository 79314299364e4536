#include "daemon/cluster/status_delegate.h"

#include <algorithm>

namespace gossipd::daemon {

double StatusDelegate::rounds_per_second() const {
  return std::max(state_.snapshot().rounds_per_second(), 0.0);
}

void StatusDelegate::view_published(const topology::View& view, uint32_t view_changes) {
  state_.update([&](proto::Status& s) {
    s.clear_members();
    for (const auto& m : view.members()) s.add_members(m);
    s.set_view_changes(view_changes);
    s.set_view_id(view.id());
  });
}

void StatusDelegate::group_taken(const std::string& label) {
  state_.update([&](proto::Status& s) { s.set_group(label); });
}

}  // namespace gossipd::daemon
