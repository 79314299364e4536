#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/worker/mode.h"

namespace gossipd::daemon {

// The modes one command knows, each a fresh object (a mode stores its
// flags): gossipd run, --check-config, gossipctl compare and the run
// scaffold all ask them. The registry is modes.cc's list, one line a mode.
class ModeSet {
 public:
  ModeSet();  // every registered mode, in the order --help lists them
  explicit ModeSet(std::vector<std::unique_ptr<Mode>> modes) : modes_(std::move(modes)) {}

  // The mode called `name`; throws UsageError naming the modes there are.
  const Mode& find(std::string_view name) const;
  Mode& find(std::string_view name);
  std::vector<std::string> names() const;
  const std::vector<std::unique_ptr<Mode>>& all() const { return modes_; }

  // Every mode's flags on gossipd run (`flags` says whose is which).
  void add_flags(ModeFlags& flags);

 private:
  std::vector<std::unique_ptr<Mode>> modes_;
};

// The registry: one fresh object of every mode.
std::vector<std::unique_ptr<Mode>> registered_modes();

}  // namespace gossipd::daemon
