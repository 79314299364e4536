#pragma once

#include <string>
#include <vector>

#include "daemon/ctl/compare.h"

namespace gossipd::daemon {

// Helpers compare.cc and compare_args.cc share (compare_args.cc; the rest
// of what it defines is declared in compare.h).

// What every worker is given as --send-buffer-kb, 0 for nothing.
int send_buffer_kb(const CompareOptions& options);
// The gossipd binary: --gossipd, else the one next to gossipctl.
std::string find_gossipd(const CompareOptions& options);
// "2048,2048,2048": --hidden as gossipd run takes it.
std::string join_widths(const std::vector<int>& widths);

// The failure timeout compare gives `workers` processes on `cores` cores:
// none (gossipd run's 3 s) up to 4 workers a core; past that 3 s x workers
// / (4 x cores), so a member the loaded machine leaves unscheduled for a
// while is neither evicted nor judges itself cut off (64 workers on 2
// cores: 24 s). Returns the flags to add ({} for none).
std::vector<std::string> load_failure_timeout_args(int workers, unsigned cores);

}  // namespace gossipd::daemon
