#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "daemon/cluster/checkpoint.h"
#include "protocol/collectives/group.h"

namespace gossipd::daemon {

// Where a restarted grid (or pipeline) goes on from. Every cell (or stage)
// holds only its share of the replica, so all must take their checkpoints of one round: the newest
// round every cell has one of. A cell whose newest is newer goes back to
// that round; its newer checkpoints, of a run that no longer continues, are
// renamed *.abandoned (kept, never taken again).

// The rounds a cell can start from: `current` (the checkpoint it loaded, 0
// for none) and those of its older checkpoint files in `dir`, newest first,
// at most kResumeRounds.
constexpr size_t kResumeRounds = 8;
std::vector<uint64_t> resumable_rounds(const std::filesystem::path& dir, uint64_t current);

// The newest round in every list; 0 when every list is empty (a fresh
// start); nullopt when there are checkpoints but no round common to all.
std::optional<uint64_t> common_round(const std::vector<std::vector<uint64_t>>& rounds);

// Every cell's resumable rounds, allgathered over `all` (every member calls
// it with its own): the common round, or UsageError with the same line on
// every cell naming each cell's rounds.
uint64_t agree_on_round(protocol::Group& all, const std::vector<uint64_t>& mine);

// Renames the checkpoints in `dir` newer than `round` to *.abandoned.
void abandon_after(const std::filesystem::path& dir, uint64_t round);

// Where this process goes on from, agreed over `all`: nullopt for the state
// it has (`mine`, the round it loaded), or the checkpoint of the newest
// round every process has (checkpoint_to_go_back_to).
std::optional<ReplicaState> state_to_go_back_to(protocol::Group& all, const std::filesystem::path& dir,
                                                uint64_t mine, const std::string& id,
                                                const std::string& layout, size_t params);

// Going back to `round`: its checkpoint in `dir`, which must hold this
// process's share (`layout`, `params` floats), read; the newer ones
// abandoned (abandon_after) and a line on stdout saying so. UsageError
// naming the file when it cannot be read or is another share.
ReplicaState checkpoint_to_go_back_to(const std::filesystem::path& dir, uint64_t round, const std::string& id,
                                      const std::string& layout, size_t params);

}  // namespace gossipd::daemon
