#pragma once

#include <string>

namespace CLI {
class App;
}

namespace gossipd::daemon {

struct CompareOptions;

// gossipctl compare's, simulate's and tune's --inject-byzantine w3=scaled,
// w5=sign_flip (the workers named run gossipd run --inject-byzantine) and
// --robust (gossipd run --robust for every entry that takes it, or per
// protocol as for --compress).
void add_byzantine_flags(CLI::App* cmd, CompareOptions& options);
// Types --inject-byzantine once its text is read, at the top of each command
// that takes it: UsageError in one line for a worker that is not among
// --workers or an attack gossipd run would refuse.
void resolve_byzantine(CompareOptions& options);
// ", w3 Byzantine: scaled (--inject-byzantine)" for the report's setup line
// ("" for none).
std::string byzantine_setup(const CompareOptions& options);

}  // namespace gossipd::daemon
