#include "daemon/ctl/compare_report.h"

#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "daemon/config/cli.h"
#include "daemon/ctl/child_process.h"
#include "daemon/ctl/compare_entry.h"
#include "daemon/ctl/mean_curve.h"
#include "daemon/observe/metrics_log.h"

namespace gossipd::daemon {
namespace {

namespace fs = std::filesystem;

struct Plot {
  std::string file, title, xlabel, ylabel;
  int x, y;  // curve.dat columns
  bool logscale;
};
// True when column `col` (1-based) of a curve.dat holds a value > 0.
bool has_positive(const std::string& path, int col) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    double v = 0;
    for (int i = 0; i < col && fields >> v; ++i) {
    }
    if (fields && v > 0) return true;
  }
  return false;
}

const std::vector<Plot>& plots() {
  static const std::vector<Plot> p{
      {"accuracy_vs_time.svg", "Mean test accuracy vs wall time", "seconds", "test accuracy", 2, 3, false},
      {"accuracy_vs_epoch.svg", "Mean test accuracy vs epochs", "epoch", "test accuracy", 1, 3, false},
      {"consensus.svg", "Consensus distance (gossip)", "epoch", "mean squared distance from the mean", 1, 4,
       true},
      {"bytes_per_round.svg", "Gossip bytes sent per worker per round", "epoch", "bytes", 1, 5, false},
      {"round_time.svg", "Round time", "epoch", "ms per round", 1, 6, false},
  };
  return p;
}

void plot(const std::string& out, const proto::CompareSummary& summary) {
  std::vector<std::string> finished;
  for (const auto& r : summary.results()) {
    if (r.status() == "ok") finished.push_back(r.algo());
  }
  std::ostringstream gp;
  gp << "set terminal svg size 720,420 dynamic enhanced font 'sans,12'\nset grid\nset key bottom right\n";
  for (const auto& p : plots()) {
    // A simulated run's times are its time model's (gossipctl simulate).
    std::string title = p.title;
    if (const size_t at = title.find("wall time"); summary.simulated() && at != std::string::npos)
      title.replace(at, 4, "modelled");
    gp << "set output '" << out << "/" << p.file << "'\nset title '" << title << "'\nset xlabel '" << p.xlabel
       << "'\nset ylabel '" << p.ylabel << "'\n"
       << (p.logscale ? "set logscale y\n" : "unset logscale y\n");
    // A log scale needs a positive value: AllReduce's replicas are identical,
    // and so are two Crossover replicas after every round.
    std::vector<std::string> algos;
    for (const auto& a : finished) {
      if (!p.logscale || has_positive(out + "/" + entry_dir(a) + "/curve.dat", p.y)) algos.push_back(a);
    }
    if (algos.empty()) {
      gp << "unset logscale y\nset label 1 'no data: no protocol that measures this finished' at graph "
            "0.5,0.5 "
            "center\nplot [0:1] [0:1] 2 notitle\nunset label 1\n";
      continue;
    }
    gp << "plot ";
    for (size_t i = 0; i < algos.size(); ++i) {
      gp << (i ? ", " : "") << "'" << out << "/" << entry_dir(algos[i]) << "/curve.dat' using " << p.x << ":"
         << (p.logscale ? "($" + std::to_string(p.y) + " > 0 ? $" + std::to_string(p.y) + " : NaN)"
                        : std::to_string(p.y))
         << " with linespoints title '" << algos[i] << "'";
    }
    gp << "\n";
  }
  run_gnuplot(out, gp.str());
}

std::string table(const proto::CompareSummary& summary, double target) {
  std::ostringstream t;
  t << "| protocol | status | final mean acc | best mean acc | averaged model acc | time to " << target
    << " (training only) | epochs to " << target
    << " | rounds/s | comm ms/round | bytes/worker/round | segments skipped | "
       "consensus distance | wall s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : summary.results()) {
    if (r.status() != "ok") {
      t << "| " << r.algo() << " | " << r.status() << " | | | | | | | | | | | |\n";
      continue;
    }
    const bool one_replica = parse_compare_entry(r.algo(), EntryContext{.workers = 0}).one_replica;
    t << "| " << r.algo() << " | ok | " << format("%.4f", r.final_mean_accuracy()) << " | "
      << format("%.4f", r.best_mean_accuracy()) << " | "
      << (r.averaged_model_accuracy() < 0 ? "n/a" : format("%.4f", r.averaged_model_accuracy())) << " | "
      << time_to_target(r) << " | " << (r.epochs_to_target() < 0 ? "—" : format("%.3g", r.epochs_to_target()))
      << " | " << format("%.1f", r.rounds_per_second()) << " | " << format("%.1f", r.comm_ms_per_round())
      << " | " << (r.bytes_per_worker_per_round() > 0 ? format("%.0f", r.bytes_per_worker_per_round()) : "—")
      << " | " << r.segments_skipped() << " | "
      << (one_replica ? "0 (exact)" : format("%.3g", r.final_consensus_distance())) << " | "
      << format("%.1f", r.wall_seconds()) << " |\n";
  }
  return t.str();
}

}  // namespace

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out) throw DaemonError("cannot write " + path);
}

void run_gnuplot(const std::string& out, const std::string& script) {
  write_text_file(out + "/plots.gp", script);
  const std::string cmd = "gnuplot '" + out + "/plots.gp' 2> '" + out + "/gnuplot.err'";
  if (std::system(cmd.c_str()) != 0) {
    throw DaemonError("gnuplot failed on " + out +
                      "/plots.gp: " + last_line(read_file(out + "/gnuplot.err")));
  }
}

std::string format(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "35.0 s (26.1 s)": wall time, and training time with the evaluations left out.
std::string time_to_target(const proto::CompareResult& r) {
  if (r.seconds_to_target() < 0) return "not reached";
  return format("%.1f s", r.seconds_to_target()) + " (" + format("%.1f s", r.train_seconds_to_target()) + ")";
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

void require_gnuplot() {
  const char* path = getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    if (!d.empty() && access((fs::path(d) / "gnuplot").c_str(), X_OK) == 0) return;
  }
  throw UsageError(
      "gnuplot not found, which draws the report's plots: apt-get install gnuplot-nox "
      "(or run deploy/install-deps.sh)");
}

void prepare_out_dir(const std::string& out) {
  std::error_code ec;
  if (fs::exists(out + "/summary.json")) {
    throw UsageError(out +
                     " already holds a comparison (summary.json): choose another --out or move it away");
  }
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) throw UsageError("cannot create --out " + out + ": " + ec.message());
}

std::vector<proto::EpochRecord> read_epoch_records(const std::string& path) {
  std::vector<proto::EpochRecord> out;
  std::ifstream in(path);
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  for (std::string line; std::getline(in, line);) {
    proto::EpochRecord r;
    if (line.empty() || !google::protobuf::util::JsonStringToMessage(line, &r, opts).ok()) continue;
    if (r.progress() == 0) r.set_progress(r.epoch());  // written before evaluations inside epochs existed
    if (r.train_seconds() == 0) r.set_train_seconds(r.wall_seconds());  // ... or training time (and collect)
    out.push_back(r);
  }
  return out;
}

void summarize_protocol(const std::vector<std::string>& metrics_files, double target, const std::string& dir,
                        proto::CompareResult& res) {
  std::vector<std::vector<proto::EpochRecord>> recs;
  for (const auto& f : metrics_files) recs.push_back(read_epoch_records(f));
  std::ofstream curve(dir + "/curve.dat");
  curve << "# epoch wall_seconds mean_test_accuracy consensus_distance bytes_per_worker_per_round round_ms\n";
  CurvePoint prev;
  res.set_seconds_to_target(-1);
  res.set_train_seconds_to_target(-1);
  res.set_epochs_to_target(-1);
  const bool one_model = entry_reads_one_model(res.algo());
  for (const CurvePoint& p : one_model ? model_curve(recs) : mean_curve(recs)) {
    const double d_rounds = static_cast<double>(p.round - prev.round);
    const double per_round = d_rounds > 0 ? (p.bytes_sent - prev.bytes_sent) / d_rounds : 0;
    const double round_ms = d_rounds > 0 ? 1000.0 * (p.wall_seconds - prev.wall_seconds) / d_rounds : 0;
    curve << p.progress << ' ' << p.wall_seconds << ' ' << p.test_accuracy << ' ' << p.consensus_distance
          << ' ' << per_round << ' ' << round_ms << '\n';
    prev = p;
    res.set_best_mean_accuracy(std::max(res.best_mean_accuracy(), p.test_accuracy));
    res.set_final_mean_accuracy(p.test_accuracy);
    res.set_final_consensus_distance(p.consensus_distance);
    res.set_wall_seconds(p.wall_seconds);
    res.set_rounds(p.round);
    if (res.seconds_to_target() < 0 && p.test_accuracy >= target) {
      res.set_seconds_to_target(p.wall_seconds);
      res.set_train_seconds_to_target(p.train_seconds);
      res.set_epochs_to_target(p.progress);
    }
  }
  double rate = 0, bytes = 0, comm = 0;
  uint64_t skipped = 0;
  for (const auto& r : recs) {
    if (r.empty()) continue;
    rate += r.back().rounds_per_second() / static_cast<double>(recs.size());
    comm += r.back().comm_ms_per_round() / static_cast<double>(recs.size());
    bytes += static_cast<double>(r.back().bytes_sent()) / static_cast<double>(recs.size());
    skipped += r.back().segments_skipped();
  }
  res.set_rounds_per_second(rate);
  res.set_comm_ms_per_round(comm);
  res.set_bytes_per_worker_per_round(res.rounds() > 0 ? bytes / static_cast<double>(res.rounds()) : 0);
  res.set_segments_skipped(skipped);
}

void write_html_report(const std::string& out, const std::string& title, const std::string& setup,
                       const std::string& markdown_table,
                       const std::vector<std::pair<std::string, std::string>>& plots) {
  std::ostringstream html;
  html << "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>" << title
       << "</title><style>"
          "body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
          "td,th{border:1px solid #bbb;padding:4px 8px;text-align:right}td:first-child{text-align:left}"
          "</style></head><body>\n<h1>"
       << title << "</h1>\n<p>" << setup << "</p>\n<table>\n";
  std::istringstream rows(markdown_table);
  int n = 0;
  for (std::string line; std::getline(rows, line); ++n) {
    if (n == 1) continue;  // the markdown rule
    const std::string cell = n == 0 ? "th" : "td";
    html << "<tr>";
    std::stringstream cells(line.substr(1));
    for (std::string c; std::getline(cells, c, '|');) {
      if (c.find_first_not_of(' ') == std::string::npos && cells.peek() == EOF) break;
      html << "<" << cell << ">" << c << "</" << cell << ">";
    }
    html << "</tr>\n";
  }
  html << "</table>\n";
  for (const auto& [plot_title, file] : plots) {
    std::string svg = read_file(out + "/" + file);
    const auto start = svg.find("<svg");
    html << "<h2>" << plot_title << "</h2>\n"
         << (start == std::string::npos ? "" : svg.substr(start)) << "\n";
  }
  html << "</body></html>\n";
  write_text_file(out + "/report.html", html.str());
}

void write_compare_report(const std::string& out, const proto::CompareSummary& summary, double target,
                          const std::string& setup) {
  write_text_file(out + "/summary.json", to_json(summary) + "\n");
  plot(out, summary);
  std::ostringstream md;
  md << "# gossipd compare\n\n"
     << setup << "\n\n"
     << table(summary, target)
     << "\nbytes/worker/round counts gossip payload and envelopes, and for AllReduce-SGD its collectives' "
        "payload; a dash where a mode counts none. "
        "Per-worker metrics: `<protocol>/w<i>.jsonl`; logs `<protocol>/w<i>.log`; data `summary.json`.\n\n";
  for (const auto& p : plots()) md << "## " << p.title << "\n\n![" << p.title << "](" << p.file << ")\n\n";
  write_text_file(out + "/report.md", md.str());

  std::vector<std::pair<std::string, std::string>> svgs;
  for (const auto& p : plots()) svgs.emplace_back(p.title, p.file);
  write_html_report(out, "gossipd compare", setup, table(summary, target), svgs);
}

// The preset's own summary, table and plot over its configurations.
void write_preset_report(const std::string& out, const proto::ComparePreset& p,
                         const std::string& description, const std::string& x_label, double target,
                         const std::vector<PresetConfig>& configs) {
  write_text_file(out + "/summary.json", to_json(p) + "\n");
  std::ostringstream md;
  md << "# gossipd compare --preset " << p.preset() << "\n\n"
     << description << " Each configuration has its own report in its directory.\n\n"
     << "| configuration | workers | batch/worker | lr | protocol | status | round ms | of which comm | time "
        "to "
     << target << " (training only) | epochs to " << target
     << " | final mean acc |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::map<std::string, std::ostringstream> per_algo;
  for (size_t i = 0; i < configs.size() && i < static_cast<size_t>(p.runs_size()); ++i) {
    const auto& c = configs[i];
    for (const auto& r : p.runs(static_cast<int>(i)).results()) {
      const double round_ms = r.rounds_per_second() > 0 ? 1000.0 / r.rounds_per_second() : 0;
      md << "| [" << c.name << "](" << c.name << "/report.md) | " << c.workers << " | " << c.batch << " | "
         << format("%g", c.lr) << " | " << r.algo() << " | " << r.status() << " | "
         << format("%.1f", round_ms) << " | " << format("%.1f", r.comm_ms_per_round()) << " | "
         << time_to_target(r) << " | "
         << (r.epochs_to_target() < 0 ? "—" : format("%.3g", r.epochs_to_target())) << " | "
         << format("%.4f", r.final_mean_accuracy()) << " |\n";
      if (r.status() == "ok") per_algo[r.algo()] << c.x << " " << round_ms << "\n";
    }
  }
  std::ostringstream gp;
  gp << "set terminal svg size 720,420 dynamic enhanced font 'sans,12'\nset grid\nset key top left\nset "
        "output '"
     << out << "/round_time.svg'\nset title 'Round time'\nset xlabel '" << x_label
     << "'\nset ylabel 'ms per round'\n"
     << (x_label == "global batch" ? "set logscale x 2\n" : "");
  if (per_algo.empty()) {
    gp << "plot [0:1] [0:1] 2 notitle\n";
  } else {
    gp << "plot ";
    bool first = true;
    for (auto& [algo, rows] : per_algo) {
      std::ofstream(out + "/" + entry_dir(algo) + ".dat") << rows.str();
      gp << (first ? "" : ", ") << "'" << out << "/" << entry_dir(algo)
         << ".dat' using 1:2 with linespoints title '" << algo << "'";
      first = false;
    }
    gp << "\n";
  }
  run_gnuplot(out, gp.str());
  md << "\n![Round time](round_time.svg)\n";
  write_text_file(out + "/report.md", md.str());
}

}  // namespace gossipd::daemon
