#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gossipd::daemon {

// The value one protocol takes from a gossipctl compare flag that may differ
// per protocol (--compress): "VALUE" for every protocol, "ALGO=VALUE,..."
// for those named (the others: `fallback`), or both ("int8,allreduce=none":
// the bare value for the protocols not named). Throws UsageError naming
// `flag` for a name not in `algos`, a protocol named twice, two bare values
// or an empty item.
std::string per_protocol_value(const std::string& flag, const std::string& spec, const std::string& algo,
                               const std::vector<std::string>& algos, const std::string& fallback);

// The compare flags that take per_protocol_value's syntax, each with the
// value that changes nothing (what a protocol not named gets, and the only
// value a mode that does not take the flag accepts).
const std::vector<std::pair<std::string, std::string>>& per_protocol_flags();

// compare --local-steps' value for one protocol, checked: a whole number of
// steps, 1 or more (UsageError otherwise).
std::string checked_local_steps(const std::string& value);
// compare --outer-momentum's value for one protocol, checked: in [0, 1).
std::string checked_outer_momentum(const std::string& value);

}  // namespace gossipd::daemon
