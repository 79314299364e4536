#include "daemon/worker/robust_flags.h"

#include <cmath>

#include "daemon/config/cli.h"
#include "daemon/config/mode_flags.h"
#include "daemon/worker/mode.h"
#include "daemon/worker/replica.h"

namespace gossipd::daemon {
namespace {

// "KIND:VALUE" split at the first colon; the value empty when there is none.
std::pair<std::string, std::string> split(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {text, ""};
  return {text.substr(0, colon), text.substr(colon + 1)};
}

// `text` as a finite number above zero, or UsageError naming `flag`.
double positive(const std::string& flag, const std::string& given, const std::string& text) {
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(v) || v <= 0)
    throw UsageError(flag + " '" + given + "': '" + text + "' is not a number above 0");
  return v;
}

// "sign_flip, scaled, ...": the attacks, for help and errors.
std::string attack_list() {
  std::string kinds;
  for (const std::string& k : protocol::attack_names()) kinds += (kinds.empty() ? "" : ", ") + k;
  return kinds;
}

// --inject-byzantine.
void add_attack_flag(ModeFlags& f, RobustFlags& into) {
  f.option(
      "--inject-byzantine", into.inject_byzantine,
      "Fault injection: this member sends Byzantine values instead of its own: KIND[:MAGNITUDE], KIND one "
      "of " +
          attack_list() +
          " (scaled: the factor, default 1000; noise: the standard deviation, default 1; ipm: ε, default "
          "0.1; alie: z, default 1; dissensus: ε, default 1; label_flip trains on flipped labels and "
          "sends what it trained). It trains and mixes as an honest member does");
}

}  // namespace

void add_robust_flags(ModeFlags& f, RobustFlags& into, const std::string& what) {
  add_attack_flag(f, into);
  f.describe("--inject-byzantine", what);
  f.option("--robust", into.robust,
           "How what the members send is averaged: none (as it comes), clip (each peer's difference clipped "
           "to an adaptive radius, ClippedGossip or CenteredClip as the protocol takes it; a peer far beyond "
           "it round after round is named and left out) or clip:TAU (a fixed radius, the L2 norm of a "
           "difference)")
      ->capture_default_str();
  f.describe("--robust", what);
  f.flag("--evict-byzantine", into.evict_byzantine,
         "With --robust clip: a member named Byzantine by --evict-quorum members leaves every view and is "
         "refused should it come back in this run");
  f.option("--evict-quorum", into.evict_quorum,
           "With --evict-byzantine: how many distinct members must name a member before it is evicted (one "
           "more than the attackers that may accuse the honest)")
      ->capture_default_str();
}

std::optional<protocol::AttackSpec> checked_attack(const RobustFlags& flags, uint64_t seed) {
  if (flags.inject_byzantine.empty()) return std::nullopt;
  const auto [name, value] = split(flags.inject_byzantine);
  const auto kind = protocol::attack_from_name(name);
  if (!kind)
    throw UsageError("--inject-byzantine '" + flags.inject_byzantine + "': '" + name +
                     "' is not an attack; use one of " + attack_list());
  protocol::AttackSpec spec{*kind, 0, seed};
  if (value.empty()) return spec;
  if (protocol::default_magnitude(*kind) == 0)
    throw UsageError("--inject-byzantine '" + flags.inject_byzantine + "': " + name +
                     " takes no value (scaled, noise, ipm, alie and dissensus do)");
  spec.magnitude = positive("--inject-byzantine", flags.inject_byzantine, value);
  return spec;
}

std::optional<protocol::ClipSpec> checked_defence(const RobustFlags& flags) {
  const auto [name, value] = split(flags.robust);
  if (name == "none" && value.empty()) return std::nullopt;
  if (name != "clip")
    throw UsageError("--robust '" + flags.robust + "' is not a defence; use none, clip or clip:TAU");
  protocol::ClipSpec spec;
  if (!value.empty()) spec.tau = positive("--robust", flags.robust, value);
  return spec;
}

size_t checked_eviction(const RobustFlags& flags) {
  if (!flags.evict_byzantine) {
    if (flags.evict_quorum != RobustFlags{}.evict_quorum)
      throw UsageError(
          "--evict-quorum without --evict-byzantine changes nothing: add --evict-byzantine, or drop it");
    return 0;
  }
  if (!checked_defence(flags))
    throw UsageError("--evict-byzantine evicts the members --robust names: add --robust clip, or drop it");
  if (flags.evict_quorum == 0)
    throw UsageError("--evict-quorum 0: a member is evicted once at least 1 member named it; give 1 or more");
  return flags.evict_quorum;
}

void add_byzantine_launch(EntryLaunch& l, const EntryContext& c) {
  if (c.byzantine.empty()) return;
  l.per_worker.resize(c.workers);
  for (const auto& [k, attack] : c.byzantine)
    l.per_worker.at(k).insert(l.per_worker.at(k).end(), {"--inject-byzantine", attack});
}

void add_robust_launch(EntryLaunch& l, const EntryContext& c) {
  if (const std::string r = c.value_of("--robust", "none"); r != "none") {
    RobustFlags flags;
    flags.robust = r;
    checked_defence(flags);
    l.flags.insert(l.flags.end(), {"--robust", r});
    if (c.evict_byzantine) l.flags.push_back("--evict-byzantine");
  }
  add_byzantine_launch(l, c);
}

bool robust_given(const RobustFlags& flags) {
  return !flags.inject_byzantine.empty() || flags.robust != "none";
}

std::unique_ptr<Replica> poisoned(std::unique_ptr<Replica> loaded, const RobustFlags& flags) {
  const auto attack = checked_attack(flags, 0);
  if (attack && protocol::attack_poisons_data(attack->kind) && loaded->trained())
    loaded->trained()->flip_labels();
  return loaded;
}

std::string why_not_hosted(const RobustFlags& flags) {
  const auto attack = checked_attack(flags, 0);
  if (!attack || !protocol::attack_poisons_data(attack->kind)) return "";
  return "inject_byzantine='label_flip' poisons the daemon's own trainer's data, and a host trains on its "
         "own: "
         "flip the labels in the host's data loader instead";
}

}  // namespace gossipd::daemon
