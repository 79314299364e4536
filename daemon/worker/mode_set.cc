#include "daemon/worker/mode_set.h"

#include "daemon/config/cli.h"

namespace gossipd::daemon {

Mode& ModeSet::find(std::string_view name) {
  for (const auto& m : modes_) {
    if (m->name() == name) return *m;
  }
  std::string names;
  for (const auto& m : modes_) names += (names.empty() ? "" : ", ") + m->name();
  throw UsageError("--algo " + std::string(name) + " is not a mode; the modes are " + names);
}

const Mode& ModeSet::find(std::string_view name) const { return const_cast<ModeSet*>(this)->find(name); }

std::vector<std::string> ModeSet::names() const {
  std::vector<std::string> names;
  for (const auto& m : modes_) names.push_back(m->name());
  return names;
}

void ModeSet::add_flags(ModeFlags& flags) {
  for (const auto& m : modes_) {
    flags.set_owner(m->name());
    m->add_flags(flags);
  }
}

void ModeSet::add_compare_flags(ModeFlags& flags) {
  for (const auto& m : modes_) {
    flags.set_owner(m->name());
    m->add_compare_flags(flags);
  }
}

}  // namespace gossipd::daemon
