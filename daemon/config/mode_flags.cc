#include "daemon/config/mode_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "daemon/config/cli.h"

namespace gossipd::daemon {

namespace {

// "--algo a", "--algo a and b", "--algo a, b and c".
std::string algo_list(const std::vector<std::string>& modes) {
  std::string s = "--algo ";
  for (size_t i = 0; i < modes.size(); ++i) {
    if (i > 0) s += i + 1 == modes.size() ? " and " : ", ";
    s += modes[i];
  }
  return s;
}

// A shared flag's help: each mode's own words once.
void join_help(CLI::Option& option, const std::string& help) {
  if (option.get_description().find(help) == std::string::npos)
    option.description(option.get_description() + ". " + help);
}

}  // namespace

CLI::Option* ModeFlags::another_modes(const std::string& name) const {
  CLI::Option* existing = command_.get_option_no_throw(name);
  if (existing && !flags_.contains(name))
    throw std::logic_error(owner_ + "'s flag " + name + " is one every mode shares: name it otherwise");
  return existing;
}

template <class T>
CLI::Option* ModeFlags::add(const std::string& name, T& into, const std::string& help) {
  if (CLI::Option* shared = another_modes(name)) {
    // Another mode's flag of the same name: the one value goes to both.
    shared->each([&into](const std::string& v) { CLI::detail::lexical_cast(v, into); });
    join_help(*shared, help);
    return own(name, shared);
  }
  return own(name, command_.add_option(name, into, help));
}

CLI::Option* ModeFlags::own(const std::string& name, CLI::Option* option) {
  Owned& o = flags_[name];
  o.option = option;
  if (std::find(o.owners.begin(), o.owners.end(), owner_) == o.owners.end()) o.owners.push_back(owner_);
  return option;
}

CLI::Option* ModeFlags::option(const std::string& n, std::string& into, const std::string& h) {
  return add(n, into, h);
}
CLI::Option* ModeFlags::option(const std::string& n, size_t& into, const std::string& h) {
  return add(n, into, h);
}
CLI::Option* ModeFlags::option(const std::string& n, int& into, const std::string& h) {
  return add(n, into, h);
}
CLI::Option* ModeFlags::option(const std::string& n, uint32_t& into, const std::string& h) {
  return add(n, into, h);
}
CLI::Option* ModeFlags::option(const std::string& n, double& into, const std::string& h) {
  return add(n, into, h);
}
CLI::Option* ModeFlags::option(const std::string& n, float& into, const std::string& h) {
  return add(n, into, h);
}

CLI::Option* ModeFlags::flag(const std::string& name, bool& into, const std::string& help) {
  if (CLI::Option* shared = another_modes(name)) {
    shared->each([&into](const std::string& v) { CLI::detail::lexical_cast(v, into); });
    join_help(*shared, help);
    return own(name, shared);
  }
  return own(name, command_.add_flag(name, into, help));
}

void ModeFlags::refusal(const std::string& name, std::string line) {
  flags_.at(name).refusal = std::move(line);
}

void ModeFlags::claim(std::function<bool(const RunOptions&)> given, std::string line) {
  claims_.push_back({owner_, std::move(given), std::move(line)});
}

void ModeFlags::check_given(const std::string& mode, const RunOptions& options) const {
  for (const auto& [name, o] : flags_) {
    if (o.option->count() == 0 || std::find(o.owners.begin(), o.owners.end(), mode) != o.owners.end())
      continue;
    throw UsageError(o.refusal.empty() ? name + " is for " + algo_list(o.owners) : o.refusal);
  }
  for (const Claim& c : claims_) {
    if (c.owner != mode && c.given(options)) throw UsageError(c.line);
  }
}

void ModeFlags::describe(const std::string& name, const std::string& help) {
  // A command without the shared flag (a mode's flags parsed alone) has nothing to describe.
  if (CLI::Option* shared = command_.get_option_no_throw(name)) join_help(*shared, help);
}

std::vector<std::string> ModeFlags::owners(const std::string& name) const {
  const auto it = flags_.find(name);
  return it == flags_.end() ? std::vector<std::string>{} : it->second.owners;
}

}  // namespace gossipd::daemon
