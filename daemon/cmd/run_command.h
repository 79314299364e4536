#pragma once

#include <optional>
#include <string>

#include "daemon/config/mode_flags.h"
#include "daemon/config/run_options.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/worker/mode_set.h"

namespace gossipd::daemon {

// --control-out: one JSON line per record, written and flushed whole (a
// reader sees whole lines); the file is opened at the first record, so a
// run refused before it listens leaves none. "" writes nothing.
class ControlOut {
 public:
  explicit ControlOut(std::string path) : path_(std::move(path)) {}
  void write(const proto::ControlRecord& record);

 private:
  std::string path_;
  std::optional<JsonLinesWriter> out_;
};

// gossipd run: the member of options.algo's mode (whose flags `flags` has
// parsed into `modes`), its lines on stdout and its records in
// --control-out. Returns the exit code; bad input is a UsageError.
int run_run_command(const RunOptions& options, ModeSet& modes, const ModeFlags& flags);

}  // namespace gossipd::daemon
