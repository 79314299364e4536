#pragma once

#include <cstddef>
#include <map>
#include <string>

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
// The delays by worker index, checked: UsageError in one line for a worker
// that is not among --workers or a delay that is not 0 to 60000 ms.
std::map<size_t, int> compare_step_delays(const CompareOptions& options);
// ", steps of w3 and w7 40 ms longer" for the report's setup line ("" for none).
std::string step_delays_setup(const CompareOptions& options);

}  // namespace gossipd::daemon
