// gossipctl compare's presets end to end: --preset stragglers and
// --preset byzantine (each configuration a compare run, and the preset's
// own table), and the byzantine preset's default list of attacks.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "daemon/config/cli.h"
#include "daemon/ctl/compare.h"
#include "daemon/ctl/compare_byzantine_preset.h"
#include "protocol/robust/attack.h"
#include "tests/support/process.h"
#include "tests/support/records.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using namespace std::chrono_literals;

class ComparePresets : public ::testing::Test {
 protected:
  TempDir tmp_{"gossipd_compare_presets_test"};
  const std::string dir_ = tmp_.path();
};

// Without --inject-byzantine the preset runs every attack that each entry
// takes: AllReduce-SGD refuses those aimed with what a member receives.
TEST(ByzantinePreset, ByDefaultItRunsEveryAttackEveryEntryTakes) {
  const auto names = [](std::vector<std::string> algos) {
    daemon::CompareOptions o;
    o.workers = 4;
    o.algos = std::move(algos);
    std::set<std::string> out;
    for (const auto& run : daemon::byzantine_runs(o)) out.insert(run.name);
    return out;
  };
  const auto gossip = names({"crossover", "sgp"});
  for (const std::string& kind : protocol::attack_names())
    for (const std::string d : {"-none", "-clip"}) EXPECT_TRUE(gossip.contains(kind + d)) << kind + d;
  const auto with_allreduce = names({"crossover", "allreduce"});
  EXPECT_TRUE(with_allreduce.contains("ipm-clip"));
  EXPECT_TRUE(with_allreduce.contains("label_flip-none"));
  EXPECT_FALSE(with_allreduce.contains("alie-none"));
  EXPECT_FALSE(with_allreduce.contains("dissensus-clip"));
}

// --preset stragglers: the same entries at equal speed, then with the last
// two workers computing 2x slower, compute groups added beside them; each
// configuration its report, the slow workers named in the second's.
TEST_F(ComparePresets, TheStragglersPresetRunsEqualSpeedThenTwoSlowWorkersWithComputeGroups) {
  const std::string out = dir_ + "/stragglers";
  const auto r = run({bin("gossipctl"), "compare",   "--preset",     "stragglers", "--workers", "4",
                      "--algos",        "allreduce", "--epochs",     "1",          "--batch",   "32",
                      "--train-limit",  "640",       "--test-limit", "100",        "--target",  "0.1",
                      "--out",          out},
                     300s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string report = daemon::read_file(out + "/report.md");
  EXPECT_NE(report.find("stragglers, computing w2 x2, w3 x2 (--inject-step-slowdown)"), std::string::npos)
      << report;
  for (const std::string config : {"equal", "stragglers"}) {
    for (const std::string algo : {"allreduce", "groups:2"})
      EXPECT_NE(report.find("](" + config + "/report.md) | 4 | 32 | 0.05 | " + algo + " | ok"),
                std::string::npos)
          << config << " " << algo << ": " << report;
  }
  EXPECT_NE(daemon::read_file(out + "/stragglers/report.md").find("w2 x2, w3 x2 (--inject-step-slowdown)"),
            std::string::npos);
  EXPECT_EQ(daemon::read_file(out + "/equal/report.md").find("--inject-step-slowdown"), std::string::npos);
}

// --preset byzantine with --inject-byzantine w3=scaled: without an attacker
// and with it, each without and with --robust clip; its table counts the
// honest members only, names the attacker where the defence ran, and no one
// honest anywhere.
TEST_F(ComparePresets, TheByzantinePresetRunsEachAttackWithAndWithoutTheDefenceAndSaysWhoWasNamed) {
  const std::string out = dir_ + "/byzantine";
  const auto r = run({bin("gossipctl"),     "compare",   "--preset",     "byzantine",
                      "--workers",          "4",         "--algos",      "crossover",
                      "--epochs",           "1",         "--batch",      "32",
                      "--train-limit",      "3000",      "--test-limit", "300",
                      "--inject-byzantine", "w3=scaled", "--out",        out},
                     300s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto preset = read_json_file<proto::ComparePreset>(out + "/summary.json");
  ASSERT_EQ(preset.runs_size(), 4);
  std::map<std::string, std::vector<std::string>> row;  // configuration -> the table's cells
  const std::string report = daemon::read_file(out + "/report.md");
  std::istringstream lines(report.substr(report.find("## The honest members")));
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::istringstream cut(line);
    for (std::string c; std::getline(cut, c, '|');)
      cells.push_back(c.substr(std::min(c.find_first_not_of(' '), c.size())));
    if (cells.size() == 7 && cells[2].starts_with("crossover"))
      row[cells[1].substr(0, cells[1].find(' '))] = cells;
  }
  ASSERT_EQ(row.size(), 4u) << report;
  for (const auto& [config, cells] : row)
    EXPECT_EQ(cells[6].substr(0, 4), "none") << config << ": " << report;
  EXPECT_EQ(row["scaled-clip"][5].substr(0, 6), "3 of 3") << report;
  EXPECT_EQ(row["scaled-none"][5].substr(0, 6), "0 of 3") << report;
  EXPECT_GT(std::stod(row["scaled-clip"][3]), std::stod(row["scaled-none"][3]) + 0.2) << report;
}

}  // namespace
}  // namespace gossipd::testing
