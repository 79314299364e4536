#include "daemon/sim/time_only.h"

#include <cstdio>
#include <numeric>
#include <sstream>

#include "daemon/ctl/compare_report.h"
#include "daemon/observe/message_json.h"
#include "daemon/sim/modelled_hosts.h"

namespace gossipd::daemon {
namespace {

proto::CompareResult time_only_entry(const SimulateOptions& so, const std::string& algo,
                                     const ModelledEntry& e) {
  const CompareOptions& o = so.compare;
  const ModelledTimes t = run_modelled(e, so.rounds, false);
  proto::CompareResult res = compare_entry_result(o, algo);
  const double rounds = static_cast<double>(so.rounds), n = static_cast<double>(o.workers);
  res.set_status("ok");
  res.set_rounds(so.rounds);
  res.set_wall_seconds(t.slowest_s);
  res.set_rounds_per_second(t.slowest_s > 0 ? rounds / t.slowest_s : 0);
  res.set_bytes_per_worker_per_round(static_cast<double>(t.bytes_sent) / (n * rounds));
  res.set_segments_skipped(t.skipped);
  res.set_comm_ms_per_round(1e3 * std::accumulate(t.waited.begin(), t.waited.end(), 0.0) / (n * rounds));
  for (auto set :
       {&proto::CompareResult::set_final_mean_accuracy, &proto::CompareResult::set_best_mean_accuracy,
        &proto::CompareResult::set_averaged_model_accuracy, &proto::CompareResult::set_seconds_to_target,
        &proto::CompareResult::set_epochs_to_target, &proto::CompareResult::set_train_seconds_to_target})
    (res.*set)(-1);  // nothing trained
  std::printf(
      "%-10s %.2f rounds/s (%.1f ms a round, %.1f ms waiting on the exchange), %.0f bytes/worker/round, "
      "%llu messages skipped\n",
      algo.c_str(), res.rounds_per_second(), 1e3 * t.slowest_s / rounds, res.comm_ms_per_round(),
      res.bytes_per_worker_per_round(), static_cast<unsigned long long>(t.skipped));
  std::fflush(stdout);
  return res;
}

std::string table(const proto::CompareSummary& s) {
  std::ostringstream md;
  md << "| protocol | workers | rounds | rounds/s | round ms | of which comm | bytes/worker/round | messages "
        "skipped | modelled s |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : s.results()) {
    md << "| " << r.algo() << " | " << r.workers() << " | " << r.rounds() << " | "
       << format("%.2f", r.rounds_per_second()) << " | "
       << format("%.1f", r.rounds_per_second() > 0 ? 1e3 / r.rounds_per_second() : 0) << " | "
       << format("%.1f", r.comm_ms_per_round()) << " | " << format("%.0f", r.bytes_per_worker_per_round())
       << " | " << r.segments_skipped() << " | " << format("%.2f", r.wall_seconds()) << " |\n";
  }
  return md.str();
}

}  // namespace

int run_time_only(const SimulateOptions& so) {
  const CompareOptions& o = so.compare;
  std::vector<ModelledEntry> models;  // before --out: an entry without a time model is refused first
  for (const auto& algo : o.algos) models.push_back(model_entry(so, algo));
  prepare_out_dir(o.out);
  proto::CompareSummary summary = compare_summary_header(o);
  summary.set_simulated(true);
  std::printf(
      "gossipctl simulate --no-train: %zu protocols x %d modelled workers, %llu rounds; output in %s\n",
      o.algos.size(), o.workers, static_cast<unsigned long long>(so.rounds), o.out.c_str());
  for (size_t k = 0; k < o.algos.size(); ++k)
    *summary.add_results() = time_only_entry(so, o.algos[k], models[k]);
  summary.set_time_model(time_model_words(so, models.front()) + "; nothing trained (--no-train)");
  write_text_file(o.out + "/summary.json", to_json(summary) + "\n");
  write_text_file(o.out + "/report.md",
                  "# gossipctl simulate --no-train\n\n" + summary.time_model() + ".\n\n" + table(summary));
  std::printf("gossipctl simulate: table in %s/report.md (summary.json)\n", o.out.c_str());
  return kExitOk;
}

}  // namespace gossipd::daemon
