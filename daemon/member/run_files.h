#pragma once

#include <optional>
#include <span>
#include <string>

#include "daemon/cluster/checkpoint.h"
#include "daemon/config/run_options.h"
#include "daemon/worker/replica.h"

namespace gossipd::daemon {

// The newest usable checkpoint in --checkpoint-dir (created if missing),
// checked against this worker (id, mode, the share of the replica it holds,
// sizes: a mismatch is a UsageError naming the flag); damaged ones are
// reported and skipped, never deleted.
std::optional<Checkpoint> find_resume_point(const RunOptions& options, const StateLayout& expected);

// --params-out: raw float32, written next to the target and renamed, so a
// reader never sees half a file.
void write_params(const std::string& path, std::span<const float> params);

}  // namespace gossipd::daemon
