#pragma once

#include <string>
#include <vector>

#include "daemon/sim/modelled_entry.h"

namespace gossipd::daemon {

// Puts the time model's clock into a simulated entry's metrics: worker k's
// file (files[k], gossipd run --metrics-out) is kept as NAME.wall.jsonl
// (this process's wall clock) and written anew with each record's
// wall_seconds and train_seconds at the modelled clock of its round,
// rounds_per_second and comm_ms_per_round as the model has them.
// Evaluations take no modelled time. `members`: the model's order of the
// worker ids ("w0", ...). Throws std::runtime_error naming a file it cannot
// read or write.
void write_modelled_metrics(const std::vector<std::string>& files, const std::vector<std::string>& members,
                            const ModelledTimes& times);

}  // namespace gossipd::daemon
