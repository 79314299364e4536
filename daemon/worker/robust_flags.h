#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "protocol/robust/attack.h"
#include "protocol/robust/clipped_gossip.h"

namespace gossipd::daemon {

class ModeFlags;
struct EntryContext;
struct EntryLaunch;
class Replica;

// gossipd run's --inject-byzantine, --robust and --evict-byzantine, as the modes that average
// what members send take them (flat Crossover-SGD, SGP and OSGP; AllReduce-SGD).
struct RobustFlags {
  std::string inject_byzantine;  // KIND[:MAGNITUDE]; empty: an honest member
  std::string robust = "none";   // none | clip | clip:TAU
  bool evict_byzantine = false;  // a member named by evict_quorum members leaves the view
  size_t evict_quorum = 2;
};

// Adds the flags, stored in `into`; `what` names what an attacker sends,
// the mode's note in the shared help ("gossip: its segments").
void add_robust_flags(ModeFlags& flags, RobustFlags& into, const std::string& what);
// The attack --inject-byzantine names (nullopt: none), its noise keyed by
// `seed`; UsageError in one line for an unknown kind or a bad magnitude.
std::optional<protocol::AttackSpec> checked_attack(const RobustFlags& flags, uint64_t seed);
// The defence --robust names (nullopt: none); UsageError in one line for an
// unknown one or τ <= 0.
std::optional<protocol::ClipSpec> checked_defence(const RobustFlags& flags);
// The quorum of accusers --evict-byzantine evicts on (0: no eviction);
// UsageError in one line for it without a defence or a quorum of 0.
size_t checked_eviction(const RobustFlags& flags);
// compare --inject-byzantine (EntryContext::byzantine): gossipd run
// --inject-byzantine in the launch's flags of each Byzantine worker.
void add_byzantine_launch(EntryLaunch& launch, const EntryContext& context);
// compare --robust (this protocol's value, when not none) and
// --inject-byzantine, for a mode that takes both.
void add_robust_launch(EntryLaunch& launch, const EntryContext& context);
// Either flag given.
bool robust_given(const RobustFlags& flags);
// The replica a member with these flags trains: `loaded`, its labels
// flipped for --inject-byzantine label_flip (an attack in the data).
std::unique_ptr<Replica> poisoned(std::unique_ptr<Replica> loaded, const RobustFlags& flags);
// Why a member with these flags cannot be hosted (Mode::why_not_hosted):
// label_flip poisons the daemon's own trainer, which a host does not use.
std::string why_not_hosted(const RobustFlags& flags);

}  // namespace gossipd::daemon
