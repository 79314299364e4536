#pragma once

#include <memory>
#include <optional>
#include <vector>

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

// The tools registry: one fresh object of every mode's gossipctl commands.
// Declared here, defined by the registry (daemon/modes/tools.cc, one line a
// mode that has any), which gossipctl links and gossipd does not.
std::vector<std::unique_ptr<ModeTools>> registered_tools();

// Whether `command` (nullptr: never added) was the one parsed.
bool was_parsed(const CLI::App* command);

// The usual mode's tools: one command whose flags fill an Options struct,
// added by `add` (under the parent it picks) and run by `run`.
template <typename Options>
class OneCommandTools final : public ModeTools {
 public:
  using Add = CLI::App* (*)(ToolParents& parents, Options& options);
  using Run = int (*)(const Options& options);
  OneCommandTools(Add adds, Run runs) : add_(adds), run_(runs) {}
  void add(ToolParents& parents) override { command_ = add_(parents, options_); }
  std::optional<int> run() override {
    if (!was_parsed(command_)) return std::nullopt;
    return run_(options_);
  }

 private:
  Add add_;
  Run run_;
  Options options_;
  CLI::App* command_ = nullptr;
};

}  // namespace gossipd::daemon
