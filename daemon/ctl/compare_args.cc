// gossipctl compare's workers as gossipd run processes: each one's flags,
// and the checks made before anything runs (compare.h).
#include "daemon/ctl/compare_args.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "daemon/config/cli.h"
#include "daemon/ctl/child_process.h"
#include "daemon/ctl/compare_entry.h"
#include "daemon/ctl/compare_hosts.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/ctl/compare_stragglers.h"
#include "daemon/ctl/compare_wan.h"

namespace gossipd::daemon {
namespace {

// What an entry's mode is told of this comparison.
EntryContext entry_context(const CompareOptions& o, size_t train_samples) {
  EntryContext c;
  c.workers = static_cast<size_t>(o.workers);
  c.batch = o.batch;
  c.train_samples = train_samples;
  c.hierarchy_groups = static_cast<size_t>(std::max(o.groups, 1));
  c.auto_groups = o.groups == kAutoGroups;
  c.links_capped = !o.bandwidth.empty() || o.wan;
  c.per_protocol = {{"--compress", o.compress},
                    {"--local-steps", o.local_steps},
                    {"--outer-momentum", o.outer_momentum},
                    {"--robust", o.robust}};
  c.byzantine = o.byzantine.values;
  c.evict_byzantine = o.evict_byzantine;
  return c;
}

}  // namespace

// What every worker is given as --send-buffer-kb, 0 for nothing.
int send_buffer_kb(const CompareOptions& o) {
  if (o.send_buffer_kb > 0) return o.send_buffer_kb;
  return o.bandwidth.empty() ? 0 : link_send_buffer_kb(o.bandwidth);
}

std::string find_gossipd(const CompareOptions& o) {
  if (!o.gossipd.empty()) return o.gossipd;
  std::error_code ec;
  const std::filesystem::path self = fs::read_symlink("/proc/self/exe", ec);
  return (self.parent_path() / "gossipd").string();
}

// "2048,2048,2048": --hidden as gossipd run takes it.
std::string join_widths(const std::vector<int>& widths) {
  std::string s;
  for (int w : widths) s += (s.empty() ? "" : ",") + std::to_string(w);
  return s;
}

size_t compare_train_samples(const CompareOptions& o) {
  return o.train_limit > 0 ? std::min<size_t>(o.train_limit, 60000) : 60000;
}

std::vector<std::string> compare_run_args(const CompareOptions& o, const std::string& algo, int i,
                                          const std::vector<std::string>& endpoints, const std::string& dir,
                                          const std::string& http) {
  const CompareEntry entry = compare_entry(o, algo);
  std::string peers;
  for (size_t k = 0; k < endpoints.size(); ++k)
    peers += (k ? "," : "") + ("w" + std::to_string(k)) + "=" + endpoints[k];
  const std::string id = "w" + std::to_string(i);
  std::vector<std::string> a{"--id",
                             id,
                             "--listen",
                             endpoints.at(static_cast<size_t>(i)),
                             "--peers",
                             peers,
                             "--algo",
                             entry.mode,
                             "--model",
                             o.model,
                             "--epochs",
                             std::to_string(o.epochs),
                             "--batch",
                             std::to_string(entry.launch.batch),
                             "--lr",
                             format("%g", o.lr),
                             "--seed",
                             std::to_string(o.seed),
                             "--threads",
                             std::to_string(o.threads),
                             "--segments",
                             o.segments,
                             "--quiet",
                             "--cluster-id",
                             "compare-" + entry_dir(algo),
                             "--metrics-out",
                             dir + "/" + id + ".jsonl",
                             "--params-out",
                             dir + "/" + id + ".params",
                             "--control-out",
                             dir + "/" + id + ".control",
                             "--evals-per-epoch",
                             std::to_string(o.evals_per_epoch)};
  if (!http.empty()) a.insert(a.end(), {"--http", http});
  if (!o.hidden.empty()) a.insert(a.end(), {"--hidden", join_widths(o.hidden)});
  if (o.optimizer != "sgd")
    a.insert(a.end(), {"--optimizer", o.optimizer, "--lars-eta", format("%g", o.lars_eta)});
  if (o.warmup_epochs > 0) a.insert(a.end(), {"--warmup-epochs", format("%g", o.warmup_epochs)});
  if (o.train_limit > 0) a.insert(a.end(), {"--train-limit", std::to_string(o.train_limit)});
  if (o.test_limit > 0) a.insert(a.end(), {"--test-limit", std::to_string(o.test_limit)});
  if (!o.data.empty()) a.insert(a.end(), {"--data", o.data});
  if (o.delay_ms > 0) a.insert(a.end(), {"--delay-ms", std::to_string(o.delay_ms)});
  if (o.segment_deadline_ms > 0)
    a.insert(a.end(), {"--segment-deadline-ms", std::to_string(o.segment_deadline_ms)});
  if (o.wan && o.netns) a.insert(a.end(), {"--wan", wan_topology_path(o)});  // simulate models it
  const auto slow = straggler_args(o, static_cast<size_t>(i));
  a.insert(a.end(), slow.begin(), slow.end());
  if (!o.momentum.empty()) a.insert(a.end(), {"--momentum", o.momentum});
  a.insert(a.end(), entry.launch.flags.begin(), entry.launch.flags.end());
  if (!entry.launch.per_worker.empty()) {
    const auto& own = entry.launch.per_worker.at(static_cast<size_t>(i));
    a.insert(a.end(), own.begin(), own.end());
  }
  if (const int kb = send_buffer_kb(o); kb > 0) a.insert(a.end(), {"--send-buffer-kb", std::to_string(kb)});
  a.insert(a.end(), o.extra_flags.begin(), o.extra_flags.end());
  return a;
}

std::vector<std::string> load_failure_timeout_args(int workers, unsigned cores) {
  constexpr int kDefaultMs = 3000, kWorkersPerCore = 4;
  const int per_core_bound = kWorkersPerCore * static_cast<int>(std::max(1u, cores));
  if (workers <= per_core_bound) return {};
  return {"--failure-timeout-ms", std::to_string(kDefaultMs * workers / per_core_bound)};
}

void check_compare_entries(const CompareOptions& o) {
  if (o.groups > o.workers)
    throw UsageError("--groups " + std::to_string(o.groups) + " is more than --workers");
  // Refusals first: an entry's, then a mode's flag no entry honours.
  std::string unmet;
  size_t unmet_entries = 0;
  for (const std::string& algo : o.algos) {
    const EntryLaunch l = parse_compare_entry(algo, entry_context(o, 0), *o.modes).launch;
    if (!l.unmet.empty()) unmet = l.unmet, ++unmet_entries;
  }
  if (!o.algos.empty() && unmet_entries == o.algos.size()) throw UsageError(unmet);
}

CompareEntry compare_entry(const CompareOptions& o, const std::string& algo) {
  return parse_compare_entry(algo, entry_context(o, compare_train_samples(o)), *o.modes);
}

void check_compare_setup(const CompareOptions& o) {
  require_gnuplot();
  const std::string gossipd = find_gossipd(o);
  if (access(gossipd.c_str(), X_OK) != 0) {
    throw UsageError("cannot run " + gossipd + ": build it, or name it with --gossipd");
  }
  if (o.netns && geteuid() != 0) throw UsageError("--netns creates network namespaces: run as root");
  if (!o.netns && !o.bandwidth.empty()) {
    throw UsageError("--bandwidth caps the links between namespaces: use it with --netns");
  }
}

}  // namespace gossipd::daemon
