#pragma once

#include <string>
#include <vector>

#include "daemon/worker/mode_set.h"

namespace gossipd::daemon {

// One entry of gossipctl compare --algos: a mode's name, then ":" and its
// argument where the mode takes one (Mode::entry_syntax: "grid:4x2",
// "pipeline:2x2", "groups:2"). The mode parses it and says how its workers
// are launched (Mode::launch).
struct CompareEntry {
  std::string label;  // as given: the name in the report
  std::string mode;   // gossipd run --algo
  EntryLaunch launch;
  bool one_replica = false;  // Mode::one_replica: no consensus distance, no gossip bytes
};

// Whether the mode of `entry` (an entry, or a bare mode name as gossipctl
// collect knows it) is one whose members read one model
// (Mode::members_read_one_model); false for a name that is no mode.
bool entry_reads_one_model(const std::string& entry);

// The entry as a directory and cluster-id name ("grid:4x2" -> "grid-4x2").
std::string entry_dir(std::string label);

// The entry on `context.workers` processes (0: not known yet, the syntax
// alone), launched as `modes` say (their compare flags; without them, the
// flags' defaults). Throws UsageError naming the entry and what it may be.
CompareEntry parse_compare_entry(const std::string& text, const EntryContext& context, const ModeSet& modes);
CompareEntry parse_compare_entry(const std::string& text, const EntryContext& context);

// The entries compare runs when --algos is not given: the modes with a
// default_compare_order, in that order.
std::vector<std::string> default_compare_entries();

// "" when `text` is an entry, else why not (for the flag's validator).
std::string compare_entry_error(const std::string& text);

}  // namespace gossipd::daemon
