#include "daemon/ctl/compare_presets.h"

#include <algorithm>
#include <sstream>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare_byzantine_preset.h"
#include "daemon/ctl/compare_entry.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/ctl/compare_stragglers.h"

namespace gossipd::daemon {
namespace {

// prefix + k, built with a stream: GCC 12 at -O3 takes "n" + std::to_string(n)
// for an overlapping copy here (-Wrestrict, a known false positive).
std::string name(const char* prefix, int k) {
  std::ostringstream s;
  s << prefix << k;
  return s.str();
}

// The stragglers preset: every worker at the same speed, then the slow ones
// (--inject-step-slowdown / --inject-step-delay-ms, or the last two
// computing kStragglerSlowdown times slower); compute groups (groups:2,
// ranks split in halves: the slow ones in one) beside the other entries.
std::vector<PresetRun> straggler_runs(const CompareOptions& o) {
  CompareOptions base = o;
  const ModeSet modes;
  for (const auto& m : modes.all()) {
    if (m->stragglers_entry().empty()) continue;
    const bool given = std::any_of(o.algos.begin(), o.algos.end(), [&](const std::string& a) {
      return parse_compare_entry(a, EntryContext{}).mode == m->name();
    });
    if (!given) base.algos.push_back(m->stragglers_entry());
  }
  CompareOptions slowed = base;
  if (o.step_delays.empty() && o.step_slowdowns.empty()) {
    const std::string k = format("%g", kStragglerSlowdown);
    if (o.workers < 2)
      throw UsageError("--preset stragglers slows the last two workers: give --workers 2 or more");
    const auto last = static_cast<size_t>(o.workers - 1);
    slowed.step_slowdowns = {name("w", o.workers - 2) + "=" + k + "," + name("w", o.workers - 1) + "=" + k,
                             {{last - 1, kStragglerSlowdown}, {last, kStragglerSlowdown}}};
  }
  base.step_delays = {};
  base.step_slowdowns = {};
  const auto slow =
      static_cast<double>(slowed.step_delays.values.size() + slowed.step_slowdowns.values.size());
  return {{"equal", base, 0}, {"stragglers", slowed, slow}};
}

}  // namespace

std::vector<PresetRun> preset_runs(const CompareOptions& o) {
  std::vector<PresetRun> out;
  if (o.preset == "large-batch") {
    for (int k : {1, 4, 16}) {
      PresetRun c{name("batch-x", k), o, 0};
      c.options.batch = o.batch * static_cast<size_t>(k);
      c.options.lr = o.lr * static_cast<float>(k);
      c.options.optimizer = "lars";
      c.options.lars_eta = kLargeBatchLarsEta;
      c.options.warmup_epochs = kLargeBatchWarmupEpochs;
      c.x = static_cast<double>(c.options.batch * static_cast<size_t>(o.workers));
      out.push_back(c);
    }
  } else if (o.preset == "scaling") {
    const size_t global = o.batch * 4;  // --batch is the per-worker batch at 4 workers
    for (int n : {4, 8, 16}) {
      PresetRun c{name("n", n), o, static_cast<double>(n)};
      c.options.workers = n;
      c.options.batch = std::max<size_t>(1, global / static_cast<size_t>(n));
      c.options.groups = std::min(o.groups, n);
      out.push_back(c);
    }
  } else if (o.preset == "stragglers") {
    out = straggler_runs(o);
  } else if (o.preset == "byzantine") {
    out = byzantine_runs(o);
  } else if (o.preset == "wan") {
    out.push_back({"wan", o, static_cast<double>(o.workers)});
  } else {
    out.push_back({"", o, static_cast<double>(o.workers)});
  }
  return out;
}

std::string preset_axis(const CompareOptions& o) {
  if (o.preset == "scaling" || o.preset == "wan") return "workers";
  if (o.preset == "stragglers") return "slowed workers";
  if (o.preset == "byzantine") return "configuration (table order)";
  return "global batch";
}

std::string stragglers_labels(const ModeSet& modes) {
  std::string labels;
  for (const auto& m : modes.all())
    if (!m->stragglers_entry().empty()) labels += (labels.empty() ? "" : ", ") + m->stragglers_label();
  return labels;
}

std::string preset_description(const CompareOptions& o) {
  if (o.preset == "stragglers") {
    return "Every worker at the same speed, then stragglers" +
           step_delays_setup(preset_runs(o).back().options) + ": " + stragglers_labels(*o.modes) +
           " beside the other protocols, each to " + format("%g", o.target) + " test accuracy.";
  }
  if (o.preset == "byzantine") {
    const auto runs = preset_runs(o);
    std::string names, bad;
    for (const auto& r : runs) names += (names.empty() ? "" : ", ") + r.name;
    for (const auto& [k, attack] : runs.back().options.byzantine.values)
      bad += (bad.empty() ? "" : " and ") + name("w", static_cast<int>(k));
    return "Without a Byzantine member, then with " + bad +
           " sending each attack in turn (--inject-byzantine), each without a defence (--robust none) and "
           "with one (clip): " +
           names + ".";
  }
  if (o.preset == "wan") {
    return "On a WAN emulated on one machine (" + (o.wan ? o.wan->describe() : std::string("not read")) +
           "): the kernel caps each link's rate, each worker's transport adds its links' delay, jitter and "
           "lost packets' round trips (gossipd run --wan); the topology is wan/topology.txt.";
  }
  if (o.preset == "scaling") {
    return "Workers 4, 8 and 16 at a fixed global batch of " + std::to_string(o.batch * 4) + ".";
  }
  return "Global batch x1, x4 and x16 at " + std::to_string(o.workers) +
         " workers: learning rate scaled alike (from " + format("%g", o.lr) + "), LARS (eta " +
         format("%g", kLargeBatchLarsEta) + ") and " + format("%g", kLargeBatchWarmupEpochs) +
         " epochs of linear warm-up at every batch size.";
}

}  // namespace gossipd::daemon
