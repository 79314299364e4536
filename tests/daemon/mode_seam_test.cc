// The mode seam: a mode is defined in one place (its flags, checks, compare
// entry, replica and worker), shared code asks it, and the run scaffold
// (daemon/member) runs any mode in any process.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>

#include "daemon/config/cli.h"
#include "daemon/config/mode_flags.h"
#include "daemon/ctl/compare_entry.h"
#include "daemon/member/member.h"
#include "daemon/observe/metrics_log.h"
#include "daemon/worker/mode_set.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace gossipd::daemon {
namespace {

using namespace std::chrono_literals;

// A mode as a new one is added: its own flag, its own worker (the whole
// model trained alone, every step a plain one), nothing in shared code.
// Only its registry line below (ModeSet of registered_modes() plus it)
// makes it known.
class SoloMode : public Mode {
 public:
  std::string name() const override { return "solo"; }
  std::string summary() const override { return "Solo: the whole model, trained alone (a test's mode)"; }
  void add_flags(ModeFlags& f) override { f.option("--solo-note", note_, "solo: a word for the log"); }
  void check_flags(const RunOptions&) const override {
    if (note_ == "refuse") throw UsageError("--solo-note refuse: refused by the mode");
  }
  bool accepts_joins() const override { return false; }
  std::unique_ptr<Worker> make_worker(WorkerContext& c) const override {
    struct Alone : Worker {
      explicit Alone(WorkerContext& c) : c_(c) {}
      void run(std::stop_token stop) override {
        c_.loop().run(c_.steps_per_epoch, stop,
                      [&](std::span<const uint32_t> idx) { return c_.trainer().train_step(idx); });
      }
      WorkerContext c_;  // a copy: the context lives only while the worker is made
    };
    return std::make_unique<Alone>(c);
  }
  const std::string& note() const { return note_; }

 private:
  std::string note_;
};

// What a held member tells its holder.
struct Recorder : MemberEvents {
  void listening(const proto::ControlRecord& r) override { records.push_back(r); }
  void ended(const proto::ControlRecord& r, const std::vector<std::string>&) override {
    records.push_back(r);
  }
  std::vector<proto::ControlRecord> records;
};

// gossipd run's mode flags with the solo mode added, parsed from `args`.
struct SoloCommandLine {
  explicit SoloCommandLine(const std::string& args) : flags(app) {
    std::vector<std::unique_ptr<Mode>> all = registered_modes();
    all.push_back(std::make_unique<SoloMode>());  // the one registry line
    modes = ModeSet(std::move(all));
    modes.add_flags(flags);
    app.parse(args, false);
  }
  ModeSet modes{std::vector<std::unique_ptr<Mode>>{}};
  CLI::App app;
  ModeFlags flags;
};

TEST(ModeSeam, AModeAddedInItsOwnFilesOwnsItsFlagAndRunsInTheScaffold) {
  SoloCommandLine line("--solo-note hello");
  ModeFlags& flags = line.flags;
  auto& solo = static_cast<SoloMode&>(line.modes.find("solo"));
  EXPECT_EQ(solo.note(), "hello");
  RunOptions o;
  o.algo = "solo";
  EXPECT_NO_THROW(flags.check_given("solo", o));
  o.algo = "allreduce";
  try {
    flags.check_given("allreduce", o);
    ADD_FAILURE() << "--solo-note was taken by allreduce";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--solo-note is for --algo solo");
  }

  // A member held by this process: it prints nothing, exits nothing, and
  // tells its holder where it listens and how it ended.
  testing::TempDir dir("mode_seam");
  o.algo = "solo";
  o.id = "s0";
  o.listen = "ipc://" + dir.file("s0.sock");
  o.train.epochs = 1;
  o.train.batch = 32;
  o.train.train_limit = 320;
  o.train.test_limit = 64;
  o.quiet = true;
  Recorder events;
  Member member(o, solo, events);
  const std::stop_source stop;
  EXPECT_EQ(member.run(stop.get_token()), Member::End::kDone);
  ASSERT_EQ(events.records.size(), 2u);
  EXPECT_EQ(events.records[0].event(), "listening");
  EXPECT_EQ(events.records[0].endpoint(), o.listen);
  EXPECT_EQ(events.records[1].event(), "done");
  EXPECT_EQ(events.records[1].round(), 320u / 32);
  EXPECT_EQ(events.records[1].status().state(), "done");
  EXPECT_EQ(member.replica().round(), 320u / 32);
}

TEST(ModeSeam, TheModesOwnChecksRunBeforeAnythingStarts) {
  SoloCommandLine line("--solo-note refuse");
  RunOptions o;
  o.algo = "solo";
  o.id = "s0";
  Recorder events;
  Member member(o, line.modes.find("solo"), events);
  try {
    member.run(std::stop_source().get_token());
    ADD_FAILURE() << "the mode's check did not run";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--solo-note refuse: refused by the mode");
  }
  EXPECT_TRUE(events.records.empty()) << "nothing listened";
}

// A process holding a member sets a mode's flags without a command line.
TEST(ModeSeam, AModeIsConfiguredFromItsOwnFlagsAlone) {
  SoloMode solo;
  solo.configure({"--solo-note", "configured"});
  EXPECT_EQ(solo.note(), "configured");
  try {
    solo.configure({"--stages", "2"});
    ADD_FAILURE() << "another mode's flag was taken";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--algo solo: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--stages"), std::string::npos) << e.what();
  }
}

// A flag two modes add is one flag: its value reaches both, and a third
// mode is refused it naming both.
TEST(ModeFlags, ASharedFlagReachesEveryOwnerAndIsRefusedToOthers) {
  CLI::App app;
  ModeFlags flags(app);
  std::string a, b;
  flags.set_owner("pipeline");
  flags.option("--partition", a, "pipeline's");
  flags.set_owner("sparse");
  flags.option("--partition", b, "sparse's");
  app.parse("--partition 2,3", false);
  EXPECT_EQ(a, "2,3");
  EXPECT_EQ(b, "2,3");
  EXPECT_EQ(flags.owners("--partition"), (std::vector<std::string>{"pipeline", "sparse"}));
  RunOptions o;
  EXPECT_NO_THROW(flags.check_given("sparse", o));
  try {
    flags.check_given("grid", o);
    ADD_FAILURE() << "--partition was taken by grid";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--partition is for --algo pipeline and sparse");
  }
}

size_t occurrences(const std::string& text, const std::string& words) {
  size_t n = 0;
  for (size_t at = text.find(words); at != std::string::npos; at = text.find(words, at + 1)) ++n;
  return n;
}

// A flag several modes share has one help (gossipd run --help): the words
// they have in common once, then each mode's own note once.
TEST(ModeFlags, ASharedFlagsHelpSaysTheCommonWordsOnceAndEachModesNote) {
  CLI::App app;
  ModeFlags flags(app);
  ModeSet modes;
  modes.add_flags(flags);
  for (const char* name : {"--compress", "--inject-byzantine", "--robust"}) {
    const std::string help = app.get_option(name)->get_description();
    EXPECT_EQ(occurrences(help, help.substr(0, 24)), 1u) << name << ": " << help;
    for (const char* note : {"allreduce: ", "gossip: ", "groups: "})
      EXPECT_EQ(occurrences(help, note), 1u) << name << " " << note << ": " << help;
  }
}

EntryContext four_workers() {
  EntryContext c;
  c.workers = 4;
  c.batch = 64;
  c.train_samples = 60000;
  return c;
}

// The progress total of compare's entries: a pipeline's batch is the
// workers' together (its D replicas share it), as a grid's.
TEST(CompareEntry, EachModeSaysItsBatchAndStepsPerEpoch) {
  const EntryContext c = four_workers();
  const CompareEntry pipeline = parse_compare_entry("pipeline:2x2", c);
  EXPECT_EQ(pipeline.mode, "pipeline");
  EXPECT_EQ(pipeline.launch.batch, 256u);
  EXPECT_EQ(pipeline.launch.steps_per_epoch, 60000u / 256);
  const CompareEntry planned = parse_compare_entry("pipeline", c);
  EXPECT_EQ(planned.launch.batch, 256u);
  EXPECT_EQ(planned.launch.flags, (std::vector<std::string>{"--partition", "auto", "--micro-batches", "0"}));
  const CompareEntry grid = parse_compare_entry("grid:2x2", c);
  EXPECT_EQ(grid.launch.batch, 256u);
  EXPECT_EQ(grid.launch.steps_per_epoch, 60000u / 256);
  EXPECT_TRUE(grid.one_replica);
  const CompareEntry crossover = parse_compare_entry("crossover", c);
  EXPECT_EQ(crossover.launch.steps_per_epoch, 60000u / 4 / 64);
  EXPECT_EQ(crossover.launch.flags, (std::vector<std::string>{"--consensus-every", "234"}));
  EXPECT_FALSE(crossover.one_replica);
  EXPECT_EQ(parse_compare_entry("groups:2", c).launch.flags,
            (std::vector<std::string>{"--compute-groups", "2"}));
}

// The modes parse compare's flags for their entries as gossipctl compare does.
ModeSet compare_modes(std::vector<std::string> args) {
  ModeSet modes;
  CLI::App app("compare");
  ModeFlags flags(app);
  modes.add_compare_flags(flags);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  return modes;
}

TEST(CompareEntry, PacingAndHierarchyAreTheModesToSay) {
  EntryContext c = four_workers();
  const ModeSet on = compare_modes({"--pace", "on"});
  EXPECT_TRUE(parse_compare_entry("crossover", c, on).launch.paced);
  EXPECT_TRUE(parse_compare_entry("sgp", c, on).launch.paced);
  EXPECT_FALSE(parse_compare_entry("osgp", c, on).launch.paced);
  EXPECT_FALSE(parse_compare_entry("allreduce", c, on).launch.paced);
  // auto: where compare caps the links, not on loopback; off: never.
  const ModeSet automatic = compare_modes({});
  EXPECT_FALSE(parse_compare_entry("crossover", c, automatic).launch.paced);
  c.links_capped = true;
  EXPECT_TRUE(parse_compare_entry("crossover", c, automatic).launch.paced);
  EXPECT_FALSE(parse_compare_entry("crossover", c, compare_modes({"--pace", "off"})).launch.paced);
  c.hierarchy_groups = 2;
  const CompareEntry h = parse_compare_entry("crossover", c, on);
  EXPECT_FALSE(h.launch.paced) << "hierarchical crossover does not pace";
  EXPECT_EQ(h.launch.unmet, "--pace on is for flat crossover and sgp: drop --groups or --pace");
  ASSERT_EQ(h.launch.per_worker.size(), 4u);
  EXPECT_EQ(h.launch.per_worker[3], (std::vector<std::string>{"--hierarchical", "--group", "g1"}));
  EXPECT_TRUE(parse_compare_entry("sgp", c, on).launch.per_worker.empty());
  EXPECT_TRUE(parse_compare_entry("sgp", c, on).launch.unmet.empty());
}

TEST(CompareEntry, APipelinesCompareFlagsReachItsWorkers) {
  const ModeSet modes = compare_modes({"--partition", "3,7", "--micro-batches", "4"});
  EXPECT_EQ(parse_compare_entry("pipeline", four_workers(), modes).launch.flags,
            (std::vector<std::string>{"--partition", "3,7", "--micro-batches", "4"}));
  EXPECT_EQ(parse_compare_entry("crossover", four_workers(), modes).launch.flags,
            (std::vector<std::string>{"--consensus-every", "234"}))
      << "another mode's entry is not given the pipeline's flags";
}

TEST(CompareEntry, BadEntriesAreOneLineNamingWhatTheyMayBe) {
  const EntryContext c = four_workers();
  const auto why = [&](const std::string& text) {
    try {
      parse_compare_entry(text, c);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(why("crossover:3"),
            "--algos crossover:3 is not one of allreduce, crossover, sgp, osgp, groups:G, grid:PRxPC, "
            "pipeline[:K[xD]]");
  EXPECT_NE(why("sparse").find("compare does not run the sparse mode"), std::string::npos);
  EXPECT_EQ(why("pipeline:3"), "--algos pipeline:3 needs 3 processes, --workers is 4");
  EXPECT_EQ(why("groups:3"), "--algos groups:3: 3 groups do not divide --workers 4");
  EXPECT_EQ(
      why("pipeline:0"),
      "--algos pipeline:0: give K stages or KxD (D pipelines of K stages), e.g. pipeline:2, or pipeline "
      "(planned)");
  EXPECT_EQ(compare_entry_error("pipeline:3"), "") << "the syntax alone, workers not known";
}

// gossipd run --control-out: where it listens, then how it ended, as JSON
// lines tools read instead of the log.
TEST(ControlRecords, AWorkerSaysWhereItListensAndHowItEnded) {
  testing::TempDir dir("control");
  const std::string control = dir.file("w0.control");
  const auto r = testing::run({testing::bin("gossipd"),
                               "run",
                               "--id",
                               "w0",
                               "--algo",
                               "allreduce",
                               "--listen",
                               "ipc://" + dir.file("w0.sock"),
                               "--http",
                               "127.0.0.1:0",
                               "--epochs",
                               "1",
                               "--batch",
                               "32",
                               "--train-limit",
                               "320",
                               "--test-limit",
                               "64",
                               "--quiet",
                               "--control-out",
                               control},
                              120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto records = read_control_records(control);
  ASSERT_EQ(records.size(), 2u) << r.out;
  EXPECT_EQ(records[0].event(), "listening");
  EXPECT_GT(records[0].http_port(), 0u);
  EXPECT_EQ(records[0].rank(), 0u);
  EXPECT_EQ(records[0].members(), 1u);
  EXPECT_NE(r.out.find("http on port " + std::to_string(records[0].http_port())), std::string::npos) << r.out;
  EXPECT_EQ(records[1].event(), "done");
  EXPECT_EQ(records[1].round(), 10u);
  EXPECT_EQ(records[1].status().state(), "done");
  EXPECT_EQ(records[1].param_hash().size(), 16u);
  EXPECT_NE(r.out.find("done: round 10 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("param_hash " + records[1].param_hash()), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gossipd::daemon
