#pragma once

#include <optional>

namespace CLI {
class App;
}

namespace gossipd::daemon {

// Where a mode's gossipctl commands go: the top level, or under the shared
// parents `plan` (planners) and `bench` (benchmarks).
struct ToolParents {
  CLI::App& app;
  CLI::App& plan;
  CLI::App& bench;
};

// A mode's own gossipctl commands, in the mode's folder
// (daemon/modes/<name>/): it adds them and runs the one that was parsed.
// gossipctl takes every mode's from the tools registry
// (daemon/modes/tools.cc), one line a mode that has any; gossipd links none
// of them.
class ModeTools {
 public:
  virtual ~ModeTools() = default;
  // Adds its commands (and their flags, bound to this object).
  virtual void add(ToolParents& parents) = 0;
  // The exit code of its command that was parsed; nullopt when none was.
  virtual std::optional<int> run() = 0;
};

}  // namespace gossipd::daemon
