#include "daemon/modes/groups/tune_report.h"

#include <fstream>
#include <map>
#include <sstream>

#include "daemon/ctl/compare_report.h"
#include "daemon/observe/metrics_log.h"

namespace gossipd::daemon {
namespace {

std::string maybe(double v, const char* f) { return v < 0 ? std::string("-") : format(f, v); }

// g | best lr | best momentum | predicted s: the momentum claim's column.
std::string best_per_g_table(const proto::TuneSummary& s) {
  std::map<uint32_t, const proto::TuneRun*> best;
  for (const auto& p : s.probes()) {
    if (p.predicted_seconds() < 0) continue;
    auto& b = best[p.groups()];
    if (!b || p.predicted_seconds() < b->predicted_seconds()) b = &p;
  }
  std::ostringstream t;
  t << "| g | best lr | best momentum | predicted s |\n| --- | --- | --- | --- |\n";
  for (const auto& [g, p] : best)
    t << "| " << g << " | " << format("%g", p->lr()) << " | " << format("%g", p->momentum()) << " | "
      << format("%.1f", p->predicted_seconds()) << " |\n";
  return t.str();
}

std::string outcome_text(const proto::TuneSummary& s, const TuneGoal& goal) {
  std::ostringstream t;
  t << "Probing ended: " << s.stopped() << ", after " << s.probes_size() << " probes and "
    << format("%.1f", s.tuning_seconds()) << " s of wall time (budget " << format("%g", s.budget_seconds())
    << " s).\n\n";
  if (s.chosen() < 0) return t.str() + "No probe reached " + goal.describe() + ": nothing was chosen.\n";
  const auto& c = s.probes(s.chosen());
  const auto& o = s.outcome();
  t << "Chosen: **" << c.name() << "**, predicted " << format("%.2f", c.predicted_seconds())
    << " s of training to " << goal.describe() << " (" << format("%.5f", c.seconds_per_step()) << " s/step x "
    << format("%.0f", c.steps_to_goal()) << " steps).\n\n";
  if (o.train_seconds_to_goal() < 0)
    return t.str() + "Its run did not reach the goal (" + o.stopped() + ").\n";
  const double err = (c.predicted_seconds() - o.train_seconds_to_goal()) / o.train_seconds_to_goal();
  t << "Its run reached the goal in " << format("%.2f", o.train_seconds_to_goal()) << " s of training ("
    << format("%.0f", o.steps_to_goal()) << " steps, " << format("%.1f", o.wall_seconds())
    << " s of wall time with start-up and evaluations): the prediction was off by "
    << format("%+.0f", 100 * err) << "%.\n";
  return t.str();
}

void plot(const std::string& out, const proto::TuneSummary& s, const TuneGoal& goal) {
  std::ostringstream gp;
  gp << "set terminal svg size 820,480 dynamic enhanced font 'sans,11'\nset grid\nset key outside right\n"
     << "set output '" << out << "/curves.svg'\nset title 'Every run: " << goal.describe()
     << " is the goal'\nset xlabel 'training seconds'\nset ylabel '"
     << (goal.loss ? "test loss" : "test accuracy") << "'\n";
  gp << "plot " << goal.value << " with lines dt 2 lc rgb 'black' title 'goal'";
  for (int i = 0; i < s.probes_size(); ++i)
    gp << ", '" << out << "/" << s.probes(i).dir() << "/goal.dat' using 1:2 with lines title '" << i + 1
       << " " << s.probes(i).name() << "'";
  if (!s.outcome().dir().empty())
    gp << ", '" << out << "/" << s.outcome().dir()
       << "/goal.dat' using 1:2 with linespoints lw 3 title 'run: " << s.outcome().name() << "'";
  gp << "\n";
  run_gnuplot(out, gp.str());
}

}  // namespace

void fill_run(proto::TuneRun& run, const std::vector<CurvePoint>& curve, const TuneGoal& goal) {
  run.set_seconds_per_step(seconds_per_step(curve));
  const auto at = goal_point(curve, goal);
  run.set_steps_to_goal(at ? at->steps : -1);
  run.set_train_seconds_to_goal(at ? at->train_seconds : -1);
  run.set_predicted_seconds(at ? at->steps * run.seconds_per_step() : -1);
  run.set_final_metric(curve.empty() ? -1 : goal.metric(curve.back()));
  run.set_train_seconds(curve.empty() ? 0 : curve.back().train_seconds);
}

void write_goal_curve(const std::string& path, const std::vector<CurvePoint>& curve, const TuneGoal& goal) {
  std::ostringstream d;
  d << "# train_seconds " << (goal.loss ? "test_loss" : "test_accuracy") << " steps\n";
  for (const auto& p : curve) d << p.train_seconds << ' ' << goal.metric(p) << ' ' << p.round << '\n';
  write_text_file(path, d.str());
}

void print_run(int index, const proto::TuneRun& r, const TuneGoal& goal) {
  const std::string who = index > 0 ? "probe " + std::to_string(index) : std::string("run");
  if (r.status() != "ok") {
    std::printf("gossipctl tune: %s %s FAILED: %s\n", who.c_str(), r.name().c_str(), r.status().c_str());
  } else {
    std::printf("gossipctl tune: %s %s: %s %.4f, %.5f s/step, %s steps to the goal -> %s s (ended: %s)\n",
                who.c_str(), r.name().c_str(), goal.loss ? "test loss" : "test accuracy", r.final_metric(),
                r.seconds_per_step(), maybe(r.steps_to_goal(), "%.0f").c_str(),
                maybe(r.predicted_seconds(), "%.2f").c_str(), r.stopped().c_str());
  }
  std::fflush(stdout);
}

std::string tune_setup(const TuneOptions& options) {
  const CompareOptions& o = options.run;
  std::ostringstream s;
  s << o.workers << (o.netns ? " workers in network namespaces" : " local workers")
    << (o.bandwidth.empty() ? "" : " (" + o.bandwidth + " per host)") << ", model " << o.model << ", batch "
    << o.batch << " per worker, at most " << o.epochs << " epochs per run (cosine schedule), seed " << o.seed
    << ", " << o.evals_per_epoch << " test evaluations per epoch"
    << (o.train_limit ? ", " + std::to_string(o.train_limit) + " training samples" : std::string())
    << (o.test_limit ? ", " + std::to_string(o.test_limit) + " test samples" : std::string())
    << ". Every run is gossipd run --algo groups; a probe ends at the goal, once its training time passes "
       "the "
       "best prediction so far (it cannot win), or when the budget is spent.";
  return s.str();
}

std::string no_goal_line(const proto::TuneSummary& s, const TuneGoal& goal) {
  const proto::TuneRun* best = nullptr;
  for (const auto& p : s.probes()) {
    if (p.status() == "ok" && p.final_metric() >= 0 &&
        (!best || goal.better(p.final_metric(), best->final_metric())))
      best = &p;
  }
  std::string line = "no probe reached " + goal.describe() + " (probing ended: " + s.stopped() + ", " +
                     std::to_string(s.probes_size()) + (s.probes_size() == 1 ? " probe in " : " probes in ") +
                     format("%.0f", s.tuning_seconds()) + " s)";
  if (best) line += "; the nearest was " + best->name() + " at " + format("%.4f", best->final_metric());
  return line + ": raise --budget-s or --epochs, or set an easier goal";
}

std::string probe_table(const proto::TuneSummary& s) {
  std::ostringstream t;
  t << "| # | g | lr | momentum | s/step | steps to goal | predicted s | reached in s | ended | wall s |\n"
    << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  const auto row = [&](const std::string& n, const proto::TuneRun& p) {
    t << "| " << n << " | " << p.groups() << " | " << format("%g", p.lr()) << " | "
      << format("%g", p.momentum()) << " | " << format("%.5f", p.seconds_per_step()) << " | "
      << maybe(p.steps_to_goal(), "%.0f") << " | " << maybe(p.predicted_seconds(), "%.2f") << " | "
      << maybe(p.train_seconds_to_goal(), "%.2f") << " | "
      << (p.status() == "ok" ? p.stopped() : "failed: " + p.status()) << " | "
      << format("%.1f", p.wall_seconds()) << " |\n";
  };
  for (int i = 0; i < s.probes_size(); ++i)
    row(std::to_string(i + 1) + (i == s.chosen() ? " (chosen)" : ""), s.probes(i));
  if (!s.outcome().name().empty()) row("run", s.outcome());
  return t.str();
}

void write_tune_report(const std::string& out, const proto::TuneSummary& s, const TuneGoal& goal) {
  write_text_file(out + "/tune.json", to_json(s) + "\n");
  plot(out, s, goal);
  std::ostringstream md;
  md << "# gossipctl tune\n\n"
     << s.setup() << "\n\n"
     << (s.speeds().empty() ? "" : s.speeds() + "\n\n") << outcome_text(s, goal) << "\n"
     << probe_table(s) << "\n## The best of each g\n\n"
     << best_per_g_table(s) << "\n## Every run\n\n![curves](curves.svg)\n";
  write_text_file(out + "/report.md", md.str());
  write_html_report(out, "gossipctl tune", s.setup() + "</p><p>" + outcome_text(s, goal), probe_table(s),
                    {{"Every run", "curves.svg"}});
}

}  // namespace gossipd::daemon
