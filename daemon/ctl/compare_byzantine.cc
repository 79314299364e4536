#include "daemon/ctl/compare_byzantine.h"

#include <CLI/CLI.hpp>

#include "daemon/ctl/compare.h"
#include "daemon/worker/robust_flags.h"

namespace gossipd::daemon {

void add_byzantine_flags(CLI::App* cmd, CompareOptions& o) {
  cmd->add_option("--inject-byzantine", o.byzantine.text,
                  "Workers that send Byzantine values (gossipd run --inject-byzantine), e.g. "
                  "w3=scaled,w5=sign_flip:  members that cannot be trusted, on one machine");
  cmd->add_option("--robust", o.robust,
                  "How members mix what they receive (gossipd run --robust): none or clip for every protocol "
                  "that takes it, or per protocol as for --compress (ALGO=clip,...)")
      ->capture_default_str();
  cmd->add_flag("--evict-byzantine", o.evict_byzantine,
                "Where --robust is on: a member named Byzantine by two members leaves every view and is "
                "refused should it come back (gossipd run --evict-byzantine)");
}

void resolve_byzantine(CompareOptions& o) {
  if (o.evict_byzantine && o.robust == "none")
    throw UsageError("--evict-byzantine evicts the members --robust names: add --robust clip, or drop it");
  resolve(o.byzantine, "--inject-byzantine", o.workers, [](const std::string& text, const std::string& item) {
    RobustFlags flags;
    flags.inject_byzantine = text;
    try {
      checked_attack(flags, 0);
    } catch (const UsageError& e) {
      throw UsageError("--inject-byzantine: " + item + ": " + e.what());
    }
    return text;
  });
}

std::string byzantine_setup(const CompareOptions& o) {
  std::string out;
  for (const auto& [k, attack] : o.byzantine.values)
    out += (out.empty() ? ", Byzantine " : ", ") + std::string("w") + std::to_string(k) + " " + attack;
  if (!out.empty()) out += " (--inject-byzantine)";
  if (o.robust != "none") out += ", --robust " + o.robust;
  if (o.evict_byzantine) out += ", --evict-byzantine";
  return out;
}

}  // namespace gossipd::daemon
