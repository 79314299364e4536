#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gossipd::daemon {

struct CompareOptions;

// gossipctl compare's and tune's --inject-step-delay-ms w3=40,w7=40: the
// workers named run gossipd run --inject-step-delay-ms (every step of theirs
// that much longer), so a cluster of unequal speed is reproduced on one
// machine. (simulate models slow workers with --stragglers.)
void add_step_delays_flag(CLI::App* cmd, CompareOptions& options);
// Types both flags once their text is read (PerWorker::values), at the top
// of each command that takes them: UsageError in one line for a worker that
// is not among --workers, a delay that is not 0 to 60000 ms or a slowdown
// that is not a factor from 1 to 100.
void resolve_step_delays(CompareOptions& options);
// gossipd run's flags for worker `index`: its delay and its slowdown, if any.
std::vector<std::string> straggler_args(const CompareOptions& options, size_t index);
// ", steps w3 +40 ms (--inject-step-delay-ms)" and ", w6 x2 (--inject-step-slowdown)"
// for the report's setup line ("" for none).
std::string step_delays_setup(const CompareOptions& options);

}  // namespace gossipd::daemon
