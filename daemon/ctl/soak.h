#pragma once

#include "daemon/config/cli.h"  // CLI::App, declared
#include "daemon/ctl/compare.h"

namespace gossipd::daemon {

// gossipctl soak: one protocol's workers trained under churn: every
// --churn-every-s one live member is killed (SIGKILL) and a new one started
// that joins the running cluster (the state download), on a host of its
// own, until --churn-events have happened or the run is nearly done. With
// --netns --preset wan the hosts are on --preset wan's links (soak_plan.h:
// the 4 regions over --workers hosts and every joiner's). It measures what
// soak_record.h says (round gaps, views converging after each change,
// false evictions, a split view at the end, resident memory) and the
// survivors' final accuracy, into OUT/soak.json and OUT/report.md.
// --churn-every-s 0 runs the same cluster without churn (the reference).
struct SoakOptions {
  CompareOptions compare;
  double churn_every_s = 20;
  int churn_events = 30;
};

CLI::App* add_soak_command(CLI::App& app, SoakOptions& options);
int run_soak(const SoakOptions& options);

}  // namespace gossipd::daemon
