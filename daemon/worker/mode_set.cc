#include "daemon/worker/mode_set.h"

#include <stdexcept>

#include "daemon/config/cli.h"

namespace gossipd::daemon {

ModeSet::ModeSet(std::vector<std::unique_ptr<Mode>> modes) : modes_(std::move(modes)) { lay_out_tags(); }

void ModeSet::lay_out_tags() {
  namespace tags = protocol::tags;
  const tags::Range block = tags::range(tags::User::kModes);
  uint64_t next = block.first;
  for (const auto& m : modes_) {
    if (m->tag_count() == 0) continue;
    uint64_t size = 1;
    while (size < m->tag_count()) size *= 2;
    next = (next + size - 1) / size * size;  // aligned to its size
    if (next + size > uint64_t{block.first} + block.count)
      throw std::logic_error("the modes' tags do not fit their block (protocol/wire/tags.h): " + m->name() +
                             " asks for " + std::to_string(m->tag_count()));
    m->set_tags({static_cast<uint32_t>(next), static_cast<uint32_t>(size)});
    next += size;
  }
}

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
