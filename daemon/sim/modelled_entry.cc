#include "daemon/sim/modelled_entry.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "daemon/cmd/run_flags.h"
#include "daemon/config/cli.h"
#include "daemon/ctl/compare_report.h"
#include "daemon/plan/layer_profile.h"
#include "daemon/sim/modelled_hosts.h"
#include "daemon/worker/mode.h"
#include "topology/view.h"

namespace gossipd::daemon {
namespace {

constexpr int kProfileReps = 5;

// A step's compute as the layer profile prices it: every layer forward and
// backward at the worker's batch, and the optimizer's update.
double profiled_step_s(const RunOptions& r, std::string& said) {
  std::unique_ptr<trainer::Model> model = whole_model(r);
  const trainer::OptimizerOptions optimizer = trainer_options(r.train).optimizer;
  const CachedProfile c = cached_profile(profile_file(r.cache_dir, model_key(*model, optimizer)), *model,
                                         optimizer, {r.train.batch}, kProfileReps);
  double s = c.profile.update_s_per_param * static_cast<double>(model->params().size());
  for (const trainer::LayerTiming& l : c.profile.timings(r.train.batch)) s += l.forward_s + l.backward_s;
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%.3f ms a step from the layer profile (", s * 1e3);
  said = buf + c.said + ")";
  return s;
}

std::string group_flag(const std::vector<std::string>& flags) {
  const auto at = std::find(flags.begin(), flags.end(), "--group");
  return at != flags.end() && at + 1 != flags.end() ? *(at + 1) : "";
}

}  // namespace

ModelledEntry model_entry(const SimulateOptions& o, const std::string& algo) {
  const CompareOptions& c = o.compare;
  std::vector<std::string> endpoints, ids;
  for (int k = 0; k < c.workers; ++k) {
    ids.push_back("w" + std::to_string(k));
    endpoints.push_back("inproc-hub://" + ids.back());
  }
  RunCommandLine line;
  const std::vector<std::string> args = compare_run_args(c, algo, 0, endpoints, c.out, "");
  // The model skips at the fixed deadline; members learning one from the
  // real clock's arrivals would skip what the model let through.
  for (size_t k = 0; k + 1 < args.size(); ++k) {
    if (args[k] == "--deadline" && args[k + 1] != "fixed")
      throw UsageError("--deadline " + args[k + 1] +
                       " has no time model in gossipctl simulate yet: run it with gossipctl compare");
  }
  parse_run_args(line, args);
  const CompareEntry e = compare_entry(c, algo);
  TrafficContext t;
  t.members = topology::View(0, ids).members();
  t.seed = line.options.train.seed;
  t.segments = checked_segment_table(line.options, *whole_model(line.options));
  for (const auto& id : t.members) {
    const size_t k = std::stoul(id.substr(1));
    t.labels.push_back(
        k < e.launch.per_worker.size() ? modelled_group(o, k, group_flag(e.launch.per_worker[k])) : "");
  }
  ModelledEntry m;
  m.members = t.members;
  m.traffic = line.modes.find(line.options.algo).traffic(t);
  if (!m.traffic)
    throw UsageError("gossipctl simulate has no time model for " + algo + " yet: drop it from --algos");
  const ModelledHosts hosts = modelled_hosts(o, m.members);
  m.time.links = hosts.links;
  m.time.host = hosts.host;
  m.time.host_link = hosts.host_link;
  m.time.compute = hosts.compute;
  m.time.wan = hosts.wan;
  m.time.drop_rate = o.drop_rate;
  m.time.burst_bytes = o.burst_kb * 1024;
  m.time.deadline_s = line.options.segment_deadline_ms / 1e3;
  m.time.seed = t.seed;
  m.time.step_s = o.step_ms > 0 ? o.step_ms / 1e3 : profiled_step_s(line.options, m.step);
  if (o.step_ms > 0) m.step = format("%g", o.step_ms) + " ms a step (--step-ms)";
  return m;
}

ModelledTimes run_modelled(const ModelledEntry& e, uint64_t rounds, bool keep_each_round,
                           protocol::ModelledLosses* losses) {
  TimeModel model(e.time);
  ModelledTimes t;
  for (uint64_t r = 1; r <= rounds; ++r) {
    const ModelledRound mr = model.run_round(r, e.traffic->round(r));
    t.bytes_sent += mr.bytes_sent;
    t.skipped += mr.skipped;
    if (losses) {
      for (const LostMessage& m : mr.lost) losses->add(m.round, m.from, m.to, m.segment);
    }
    if (!keep_each_round) continue;
    t.clocks.push_back(model.clocks());
    t.waits.push_back(model.waited());
  }
  t.waited = model.waited();
  t.slowest_s = model.clocks().empty() ? 0 : *std::max_element(model.clocks().begin(), model.clocks().end());
  return t;
}

std::string time_model_words(const SimulateOptions& o, const ModelledEntry& e) {
  std::ostringstream s;
  s << "modelled: ";
  if (o.compare.wan) {
    s << "a WAN of " << o.compare.wan->describe() << " (lost packets resent after two delays, no jitter); "
      << e.step;
  } else {
    s << (o.workers_per_host > 1
              ? std::to_string(o.workers_per_host) + " workers a host (between them " + o.host_bandwidth + ")"
              : std::string("one host per worker"))
      << ", every link " << (o.compare.bandwidth.empty() ? kDefaultSimulatedBandwidth : o.compare.bandwidth)
      << " with " << format("%g", o.latency_ms) << " ms per message"
      << (o.burst_kb > 0 ? " and bursts of " + format("%g", o.burst_kb) + " KiB" : "")
      << (o.slow_links.empty() ? "" : " (slower: " + o.slow_links.text + ")") << "; " << e.step;
  }
  s << (o.stragglers.empty() ? "" : "; stragglers " + o.stragglers.text)
    << (o.drop_rate > 0 ? "; " + format("%g", o.drop_rate) + " of gossip messages lost" : "")
    << "; segment deadline " << format("%g", e.time.deadline_s * 1e3) << " ms; evaluations take no time";
  return s.str();
}

}  // namespace gossipd::daemon
