#include "daemon/ctl/compare_byzantine_preset.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare_entry.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/observe/metrics_log.h"
#include "protocol/robust/attack.h"

namespace gossipd::daemon {
namespace {

PresetRun configuration(const CompareOptions& o, const std::string& attack, const std::string& defence);

// The attack kinds to run: those --inject-byzantine gives, else every kind
// that every entry takes (AllReduce-SGD refuses those aimed with what a
// member receives).
std::vector<std::string> attack_kinds(const CompareOptions& o) {
  std::vector<std::string> kinds;
  if (o.byzantine.values.empty()) {
    for (const std::string& kind : protocol::attack_names()) {
      try {
        check_compare_entries(configuration(o, kind, "none").options);
        kinds.push_back(kind);
      } catch (const UsageError&) {
        // left out of the preset's default list; named by hand it is refused in one line
      }
    }
    return kinds;
  }
  for (const auto& [k, attack] : o.byzantine.values)
    if (std::find(kinds.begin(), kinds.end(), attack) == kinds.end()) kinds.push_back(attack);
  return kinds;
}

// The attackers: the workers --inject-byzantine names, else the last one.
std::vector<size_t> attackers(const CompareOptions& o) {
  std::vector<size_t> out;
  for (const auto& [k, attack] : o.byzantine.values) out.push_back(k);
  if (out.empty()) out.push_back(static_cast<size_t>(o.workers - 1));
  return out;
}

// The configuration with `attack` ("" for none) sent by every attacker of `o`.
PresetRun configuration(const CompareOptions& o, const std::string& attack, const std::string& defence) {
  PresetRun r{(attack.empty() ? "honest" : attack) + "-" + defence, o, 0};
  r.options.robust = defence;
  r.options.byzantine = {};
  for (size_t k : attackers(o)) {
    if (attack.empty()) break;
    const std::string item = "w" + std::to_string(k) + "=" + attack;
    r.options.byzantine.text += (r.options.byzantine.text.empty() ? "" : ",") + item;
    r.options.byzantine.values[k] = attack;
  }
  return r;
}

struct Outcome {
  double accuracy = 0;  // the honest members' mean final test accuracy
  size_t namers = 0;    // honest members that named every attacker
  size_t honest = 0;
  std::set<std::string> wrong;  // "w2 by w5": honest members named
};

Outcome outcome(const std::string& dir, const PresetRun& run) {
  Outcome out;
  std::set<std::string> bad;
  for (const auto& [k, attack] : run.options.byzantine.values) bad.insert("w" + std::to_string(k));
  for (int k = 0; k < run.options.workers; ++k) {
    const std::string id = "w" + std::to_string(k);
    if (bad.contains(id)) continue;
    ++out.honest;
    const auto records = read_epoch_records(dir + "/" + id + ".jsonl");
    if (!records.empty()) out.accuracy += records.back().test_accuracy();
    std::set<std::string> named;
    const auto control = read_control_records(dir + "/" + id + ".control");
    if (!control.empty())
      for (const auto& r : control.back().status().robustness())
        if (r.named()) named.insert(r.peer());
    size_t caught = 0;
    for (const auto& n : named) {
      if (bad.contains(n))
        ++caught;
      else
        out.wrong.insert(n + " by " + id);
    }
    out.namers += !bad.empty() && caught == bad.size();
  }
  if (out.honest > 0) out.accuracy /= static_cast<double>(out.honest);
  return out;
}

}  // namespace

std::vector<PresetRun> byzantine_runs(const CompareOptions& o) {
  if (o.workers < 2)
    throw UsageError("--preset byzantine needs an honest worker beside the attackers: --workers 2 or more");
  std::vector<PresetRun> runs;
  for (const std::string defence : {"none", "clip"}) runs.push_back(configuration(o, "", defence));
  for (const auto& attack : attack_kinds(o))
    for (const std::string defence : {"none", "clip"}) runs.push_back(configuration(o, attack, defence));
  for (size_t i = 0; i < runs.size(); ++i) {
    runs[i].x = static_cast<double>(i);
    check_compare_entries(
        runs[i].options);  // an entry that cannot attack or defend: one line, before any run
  }
  return runs;
}

std::string byzantine_table(const std::string& out, const std::vector<PresetRun>& runs) {
  std::ostringstream md;
  md << "## The honest members\n\n"
     << "| configuration | protocol | honest final mean acc | vs no attacker (points) | every attacker named "
        "by "
        "| honest named |\n|---|---|---|---|---|---|\n";
  for (const auto& run : runs) {
    for (const auto& entry : run.options.algos) {
      const std::string dir = out + "/" + run.name + "/" + entry_dir(entry);
      if (!std::filesystem::exists(dir)) continue;
      const Outcome o = outcome(dir, run);
      const Outcome base =
          outcome(out + "/honest-" + run.options.robust + "/" + entry_dir(entry), runs.front());
      std::string wrong;
      for (const auto& w : o.wrong) wrong += (wrong.empty() ? "" : ", ") + w;
      md << "| " << run.name << " | " << entry << " | " << format("%.4f", o.accuracy) << " | "
         << format("%+.2f", 100 * (o.accuracy - base.accuracy)) << " | "
         << (run.options.byzantine.values.empty()
                 ? "—"
                 : std::to_string(o.namers) + " of " + std::to_string(o.honest))
         << " | " << (wrong.empty() ? "none" : wrong) << " |\n";
    }
  }
  return md.str();
}

}  // namespace gossipd::daemon
