#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "daemon/config/run_options.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace gossipd::daemon {

// The flags modes add to a command (gossipd run: Mode::add_flags; gossipctl
// compare: Mode::add_compare_flags), each owned by the modes that added it:
// a mode stores their values in itself, and after parsing gossipd run
// a flag given to another mode is refused in one line ("--stages is for
// --algo pipeline"). A name two modes add is one flag: one value, given to
// both, its help the two joined. Each call returns CLI11's option, for
// validators.
class ModeFlags {
 public:
  explicit ModeFlags(CLI::App& command) : command_(command) {}

  // The mode whose flags the next calls add.
  void set_owner(std::string mode) { owner_ = std::move(mode); }

  CLI::Option* option(const std::string& name, std::string& into, const std::string& help);
  CLI::Option* option(const std::string& name, size_t& into, const std::string& help);
  CLI::Option* option(const std::string& name, int& into, const std::string& help);
  CLI::Option* option(const std::string& name, uint32_t& into, const std::string& help);
  CLI::Option* option(const std::string& name, double& into, const std::string& help);
  CLI::Option* option(const std::string& name, float& into, const std::string& help);
  CLI::Option* flag(const std::string& name, bool& into, const std::string& help);

  // The line a flag of the owner's given to another mode is refused with
  // (default: "--NAME is for --algo A[, B and C]").
  void refusal(const std::string& name, std::string line);
  // A value of a shared flag that only the owner takes (--momentum auto):
  // `given` says whether the options hold it.
  void claim(std::function<bool(const RunOptions&)> given, std::string line);

  // Throws UsageError for the first flag given (or value claimed) that
  // `mode` does not own.
  void check_given(const std::string& mode, const RunOptions& options) const;

  // Adds the owner's words to the help of `name`, a flag every mode shares
  // (--momentum's auto: what the value means for this mode), where the
  // command has it.
  void describe(const std::string& name, const std::string& help);

  // The modes that own flag `name` (empty: no mode's).
  std::vector<std::string> owners(const std::string& name) const;

 private:
  template <class T>
  CLI::Option* add(const std::string& name, T& into, const std::string& help);
  CLI::Option* own(const std::string& name, CLI::Option* option);
  // The option another mode added under `name` (nullptr: none yet); a
  // shared flag of every mode's is a bug in the mode.
  CLI::Option* another_modes(const std::string& name) const;

  struct Owned {
    CLI::Option* option = nullptr;
    std::vector<std::string> owners;
    std::string refusal;
  };
  struct Claim {
    std::string owner;
    std::function<bool(const RunOptions&)> given;
    std::string line;
  };
  CLI::App& command_;
  std::string owner_;
  std::map<std::string, Owned> flags_;
  std::vector<Claim> claims_;
};

}  // namespace gossipd::daemon
