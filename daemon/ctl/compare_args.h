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

}  // namespace gossipd::daemon
