#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/worker/mode.h"

namespace gossipd::daemon {

// The modes one command knows, each a fresh object (a mode stores its
// flags): gossipd run, --check-config, gossipctl compare and the run
// scaffold all ask them. The registry (daemon/modes/modes.cc, one line a
// mode, the one library that links every mode) defines registered_modes()
// and the default constructor; shared code includes this header alone, so
// no include runs up from it to the modes.
class ModeSet {
 public:
  // Every registered mode, in the order --help lists them (defined by the
  // registry), or these; each mode's tags laid out (lay_out_tags).
  ModeSet();
  explicit ModeSet(std::vector<std::unique_ptr<Mode>> modes);

  // The mode called `name`; throws UsageError naming the modes there are.
  const Mode& find(std::string_view name) const;
  Mode& find(std::string_view name);
  std::vector<std::string> names() const;
  const std::vector<std::unique_ptr<Mode>>& all() const { return modes_; }

  // Every mode's flags on gossipd run (`flags` says whose is which).
  void add_flags(ModeFlags& flags);
  // Every mode's flags on gossipctl compare, for its entries.
  void add_compare_flags(ModeFlags& flags);

 private:
  // Each mode that asks for tags (Mode::tag_count, rounded up to a power of
  // two) gets a range of the modes' block (protocol/wire/tags.h), in order, each
  // aligned to its size, one after the other: they cannot meet. Throws
  // std::logic_error where they do not fit the block.
  void lay_out_tags();

  std::vector<std::unique_ptr<Mode>> modes_;
};

// The registry: one fresh object of every mode (daemon/modes/modes.cc).
std::vector<std::unique_ptr<Mode>> registered_modes();

}  // namespace gossipd::daemon
