#include "daemon/ctl/compare_entry.h"

#include <algorithm>

#include "daemon/config/cli.h"
#include "daemon/config/per_protocol.h"

namespace gossipd::daemon {
namespace {

// A per-protocol compare flag (per_protocol.h) whose value for `mode` is not
// the default, which the mode's launch did not pass on: the mode cannot.
void refuse_unpassed(const EntryLaunch& launch, const std::string& mode, const std::string& flag,
                     const std::string& spec, const std::string& value, const std::string& plain) {
  const auto& f = launch.flags;
  if (value == plain || std::find(f.begin(), f.end(), flag) != f.end()) return;
  throw UsageError(flag + ": " + mode + " takes only " + plain + "; give it " + plain + " (" + flag + " " +
                   spec + "," + mode + "=" + plain + ") or leave it out of --algos");
}

// compare --inject-byzantine for a mode whose launch did not pass it on.
void refuse_honest(const EntryLaunch& launch, const std::string& mode, const EntryContext& context) {
  if (context.byzantine.empty()) return;
  for (const auto& own : launch.per_worker)
    if (std::find(own.begin(), own.end(), "--inject-byzantine") != own.end()) return;
  throw UsageError("--inject-byzantine: " + mode +
                   " cannot send Byzantine values yet; leave it out of --algos");
}

}  // namespace

std::string entry_dir(std::string label) {
  std::replace(label.begin(), label.end(), ':', '-');
  return label;
}

CompareEntry parse_compare_entry(const std::string& text, const EntryContext& context) {
  return parse_compare_entry(text, context, ModeSet());
}

CompareEntry parse_compare_entry(const std::string& text, const EntryContext& context, const ModeSet& modes) {
  CompareEntry e;
  e.label = text;
  const size_t colon = text.find(':');
  e.mode = text.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : text.substr(colon + 1);
  std::string offered;
  for (const auto& m : modes.all()) {
    const std::string syntax = m->entry_syntax();
    if (m->name() == e.mode && syntax.empty()) throw UsageError(m->why_not_in_compare());
    // A mode whose entry is its name alone takes no argument.
    if (m->name() == e.mode && (syntax != m->name() || colon == std::string::npos)) {
      EntryContext own = context;
      for (const auto& [flag, plain] : per_protocol_flags())
        own.per_protocol[flag] =
            per_protocol_value(flag, context.value_of(flag, ""), m->name(), modes.names(), plain);
      e.launch = m->launch(text, arg, own);
      refuse_honest(e.launch, m->name(), context);
      for (const auto& [flag, plain] : per_protocol_flags())
        refuse_unpassed(e.launch, m->name(), flag, context.value_of(flag, ""), own.value_of(flag, plain),
                        plain);
      e.one_replica = m->one_replica();
      return e;
    }
    if (!syntax.empty()) offered += (offered.empty() ? "" : ", ") + syntax;
  }
  throw UsageError("--algos " + text + " is not one of " + offered);
}

std::vector<std::string> default_compare_entries() {
  std::vector<std::pair<int, std::string>> ordered;
  const ModeSet modes;
  for (const auto& m : modes.all())
    if (m->default_compare_order() > 0) ordered.emplace_back(m->default_compare_order(), m->name());
  std::sort(ordered.begin(), ordered.end());
  std::vector<std::string> entries;
  for (auto& [order, name] : ordered) entries.push_back(std::move(name));
  return entries;
}

bool entry_reads_one_model(const std::string& entry) {
  const std::string mode = entry.substr(0, entry.find(':'));
  const ModeSet modes;
  for (const auto& m : modes.all())
    if (m->name() == mode) return m->members_read_one_model();
  return false;
}

std::string compare_entry_error(const std::string& text) {
  try {
    parse_compare_entry(text, EntryContext{.workers = 0});
    return "";
  } catch (const UsageError& e) {
    return e.what();
  }
}

}  // namespace gossipd::daemon
