#include "daemon/ctl/compare_presets.h"

#include <algorithm>
#include <sstream>

#include "daemon/ctl/compare_report.h"

namespace gossipd::daemon {
namespace {

// prefix + k, built with a stream: GCC 12 at -O3 takes "n" + std::to_string(n)
// for an overlapping copy here (-Wrestrict, a known false positive).
std::string name(const char* prefix, int k) {
  std::ostringstream s;
  s << prefix << k;
  return s.str();
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
  } else {
    out.push_back({"", o, static_cast<double>(o.workers)});
  }
  return out;
}

std::string preset_description(const CompareOptions& o) {
  if (o.preset == "scaling") {
    return "Workers 4, 8 and 16 at a fixed global batch of " + std::to_string(o.batch * 4) + ".";
  }
  return "Global batch x1, x4 and x16 at " + std::to_string(o.workers) +
         " workers: learning rate scaled alike (from " + format("%g", o.lr) + "), LARS (eta " +
         format("%g", kLargeBatchLarsEta) + ") and " + format("%g", kLargeBatchWarmupEpochs) +
         " epochs of linear warm-up at every batch size.";
}

}  // namespace gossipd::daemon
