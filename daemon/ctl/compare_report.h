#pragma once

#include <string>
#include <utility>
#include <vector>

#include "proto/gossip.pb.h"

namespace gossipd::daemon {

// What gossipctl compare and collect write: per-protocol summaries from the
// workers' epoch records, gnuplot plots, summary.json, report.md and
// report.html. Knows files and protos only, not processes.

// printf-style formatting of one number.
std::string format(const char* f, double v);
// "35.0 s (26.1 s)": the time to the target, and the training time to it
// with the evaluations left out; "not reached".
std::string time_to_target(const proto::CompareResult& r);
// The last non-empty line of a text (for one-line error reports).
std::string last_line(const std::string& text);

// Writes `text` to `path` (replacing it); throws DaemonError when it cannot.
void write_text_file(const std::string& path, const std::string& text);
// Writes OUT/plots.gp and runs gnuplot on it; throws DaemonError naming gnuplot's error.
void run_gnuplot(const std::string& out, const std::string& script);
// OUT/report.html: the title, the setup sentence, a markdown table as HTML
// and each plot (title, SVG file in OUT) inline.
void write_html_report(const std::string& out, const std::string& title, const std::string& setup,
                       const std::string& markdown_table,
                       const std::vector<std::pair<std::string, std::string>>& plots);

// Throws UsageError when gnuplot, which draws every plot, is not installed.
void require_gnuplot();
// Creates `out`; throws UsageError when it cannot, or when it already holds
// a comparison (summary.json), which is never overwritten.
void prepare_out_dir(const std::string& out);

// The epoch records of one --metrics-out file (lines that do not parse are
// skipped); `progress` is filled from `epoch` where a record lacks it.
std::vector<proto::EpochRecord> read_epoch_records(const std::string& path);

// From the workers' epoch files: writes DIR/curve.dat (per-evaluation means
// over the evaluations every worker recorded; for a mode whose members read
// one model, res.algo()'s, that model's curve: model_curve) and fills `res` with accuracies, time
// and epochs to `target`, rates, bytes, skips and consensus distance.
void summarize_protocol(const std::vector<std::string>& metrics_files, double target, const std::string& dir,
                        proto::CompareResult& res);

// Writes OUT/summary.json, the plots (SVG, from each protocol's curve.dat),
// report.md and report.html; `setup` is the sentence that describes the run.
void write_compare_report(const std::string& out, const proto::CompareSummary& summary, double target,
                          const std::string& setup);

// A preset's configuration, as its table and round-time plot show it.
struct PresetConfig {
  std::string name;  // its subdirectory
  int workers = 0;
  size_t batch = 0;
  float lr = 0;
  double x = 0;  // the plot's axis (preset_axis): workers, global batch or slowed workers
};
void write_preset_report(const std::string& out, const proto::ComparePreset& p,
                         const std::string& description, const std::string& x_label, double target,
                         const std::vector<PresetConfig>& configs);

}  // namespace gossipd::daemon
