#pragma once

#include <string>
#include <vector>

#include "daemon/ctl/mean_curve.h"
#include "daemon/modes/groups/tune.h"
#include "daemon/modes/groups/tune_model.h"
#include "daemon/modes/groups/tune_summary.pb.h"
#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// What gossipctl tune records and writes: a run's figures from its curve,
// its progress line, and OUT/tune.json, curves.svg, report.md, report.html.
// Files and protos only, no processes.

// Fills the run's efficiencies, prediction and measured time to the goal.
void fill_run(proto::TuneRun& run, const std::vector<CurvePoint>& curve, const TuneGoal& goal);

// PATH: "train_seconds metric steps" per evaluation (the plot's data).
void write_goal_curve(const std::string& path, const std::vector<CurvePoint>& curve, const TuneGoal& goal);

// One line per run on stdout: probe `index` (0: the final run).
void print_run(int index, const proto::TuneRun& run, const TuneGoal& goal);

// The sentence that describes the tuning on top of its report.
std::string tune_setup(const TuneOptions& options);

// Why there is no configuration to run: what stopped the probes and the
// best one found (for the one-line error).
std::string no_goal_line(const proto::TuneSummary& summary, const TuneGoal& goal);

// The table of probes (markdown).
std::string probe_table(const proto::TuneSummary& summary);

void write_tune_report(const std::string& out, const proto::TuneSummary& summary, const TuneGoal& goal);

}  // namespace gossipd::daemon
