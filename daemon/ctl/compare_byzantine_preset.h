#pragma once

#include <string>
#include <vector>

#include "daemon/ctl/compare_presets.h"

namespace gossipd::daemon {

// --preset byzantine: every entry without a Byzantine member and then with
// one sending each attack, each once without a defence (--robust none)
// and once with it (clip): configurations honest-none, honest-clip,
// scaled-none, scaled-clip, ... The attackers are the workers
// --inject-byzantine names, with its attacks (one configuration pair per
// attack kind it gives), else the last worker with every attack.
std::vector<PresetRun> byzantine_runs(const CompareOptions& options);

// The preset's own table, from each configuration's records under `out`:
// per configuration and entry the honest members' final mean test accuracy
// (the attackers' replicas left out), its difference from the run without
// an attacker under the same defence, how many honest members named every
// attacker (/status's robustness at their end), and any honest member
// named.
std::string byzantine_table(const std::string& out, const std::vector<PresetRun>& runs);

}  // namespace gossipd::daemon
