#pragma once

#include <string>
#include <vector>

#include "daemon/ctl/compare.h"

namespace gossipd::daemon {

// One configuration of a --preset: its name (a subdirectory of --out), the
// options its comparison runs with, and its place on the preset's axis
// (workers, or the global batch).
struct PresetRun {
  std::string name;
  CompareOptions options;
  double x = 0;
};

// The Crossover-SGD paper's two experiments at our scale:
//  large-batch: --workers fixed, global batch x1, x4, x16, trained with the
//               paper's large-batch recipe: the learning rate scaled
//               linearly with the batch, LARS and a linear warm-up;
//  scaling:     4, 8 and 16 workers at a fixed global batch (--batch x 4).
//  stragglers:  every worker at one speed, then the last two computing
//               kStragglerSlowdown times slower (or the workers
//               --inject-step-slowdown / --inject-step-delay-ms name), with
//               compute groups (groups:2) beside the other entries.
//  byzantine:   without and with a Byzantine member, each attack, with and
//               without --robust clip (compare_byzantine_preset.h).
// Without a preset, one unnamed run of `options` itself.
std::vector<PresetRun> preset_runs(const CompareOptions& options);
// What a preset's configurations vary: its round-time plot's x axis.
std::string preset_axis(const CompareOptions& options);

// The sentence that describes the preset on top of its report.
std::string preset_description(const CompareOptions& options);
// What the stragglers preset adds beside the entries given: each mode's
// stragglers entry as the mode names it ("compute groups (groups:2, ...)").
std::string stragglers_labels(const ModeSet& modes);

// The large-batch recipe (preset large-batch): LARS with this trust
// coefficient and this many epochs of warm-up, at every batch size.
constexpr float kLargeBatchLarsEta = 0.02f;
constexpr float kLargeBatchWarmupEpochs = 2.0f;
// The stragglers preset's slow workers: each step's compute this many times
// the others' (the "2x").
constexpr double kStragglerSlowdown = 2.0;

}  // namespace gossipd::daemon
